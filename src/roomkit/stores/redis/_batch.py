"""Running one Lua script for many callers at once, in pipelines.

Under load, most of a call's cost is its own round trip: writing the command, waiting for
the reply, and (with ``appendfsync always``) the server's sync to disk. A
:class:`ScriptBatcher` gathers the calls made while the event loop is busy and sends them
in one pipeline: one write, one disk sync and one read serve them all. Each call still
runs as its own script on the server, atomic on its own; a pipeline only shares the trip.
A call's values are encoded before it joins a batch, so a value the client cannot send
fails that call alone, never the pipeline it would have shared.

The queue, the loop turns and the pipelines in flight are
:class:`~roomkit.stores._batching.Batcher`'s: a lone call goes out on the
next loop turn, as a plain EVALSHA, so an idle store adds no delay.

A call's ``timeout`` says how long the server may take to answer its batch, not how long
the call waits for its batch to go out: a burst of more calls than the batches in flight
take queues behind them, on a server that answers. So a call's bound
(:class:`~roomkit.stores.redis._bounds.Bound`) is paused while it queues, and counts again
once its batch has a connection, as a call queued for a connection does (see
:mod:`~roomkit.stores.redis._pools`, whose rules this queue follows): the queue has the
pool's bound (:data:`~roomkit.stores.redis._pools.QUEUE_TIMEOUT` on the store's own pool),
past which the call fails saying the store was busy, and once a call of a batch finds the
server not answering, the calls queued wait within their bounds again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError

from roomkit.stores._batching import Batcher, Call
from roomkit.stores.redis._bounds import Bound, Bounds, Counted, Turns
from roomkit.stores.redis._pools import QUEUE_TIMEOUT, StoreBlockingPool

__all__ = ["ScriptBatcher"]

_Queued = tuple[Sequence[Any], Bound | None]
"""A call's command, and the bound of its caller (``None`` for a call without one)."""


class ScriptBatcher:
    """Calls ``script`` for every caller, batching the calls of one loop turn.

    Args:
        client: the client whose pool the pipelines use.
        script: the registered script.
        max_batch: the most calls in one pipeline.
        max_in_flight: the most pipelines waiting for their replies at once; calls made
            meanwhile queue up for the next one.
    """

    def __init__(
        self,
        client: Redis,
        script: AsyncScript,
        *,
        max_batch: int = 256,
        max_in_flight: int = 4,
    ) -> None:
        self._client = client
        # The pool's own encoder, so values are encoded as the client would; redis-py
        # leaves get_encoder unannotated.
        self._encoder = client.connection_pool.get_encoder()  # type: ignore[no-untyped-call]
        self._script = script
        self._batches: Batcher[_Queued, Any] = Batcher(
            self._send, max_batch=max_batch, max_in_flight=max_in_flight
        )
        pool = client.connection_pool
        # The store's own pool resumes the bounds of a batch once it has a connection.
        self._pooled = isinstance(pool, StoreBlockingPool)
        self._limit = pool.timeout if isinstance(pool, BlockingConnectionPool) else QUEUE_TIMEOUT
        self._busy = (
            f"the call waited {self._limit:g} s for its turn to be sent, behind the "
            f"{max_in_flight} batches of calls in flight and the calls queued before it (a "
            f"queue, not a server that is down): make fewer calls at once"
            if self._limit is not None
            else ""
        )
        self._turns = Turns()

    async def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """Run the script with ``keys`` and ``args``; its reply, or the error it raised.

        Raises:
            UnicodeEncodeError: a text holds a lone surrogate (nothing was sent).
            redis.exceptions.DataError: a value is of a type Redis cannot hold.
        """
        encode = self._encoder.encode
        command = (len(keys), *map(encode, keys), *map(encode, args))
        bound = Counted.current()
        if not isinstance(bound, Bound):
            return await self._batches.submit((command, None))
        self._turns.wait(bound, self._limit, self._busy)
        try:
            return await self._batches.submit((command, bound))
        finally:
            self._turns.served(bound)

    async def _send(self, batch: list[Call[_Queued, Any]]) -> None:
        bounds = [bound for _, bound in (call.value for call in batch) if bound is not None]
        for bound in bounds:
            self._turns.left(bound)
        with Bounds(bounds) as counted:
            if not self._pooled:
                counted.resume()
            await self._run(batch)

    async def _run(self, batch: list[Call[_Queued, Any]]) -> None:
        replies = await self._execute([command for command, _ in (call.value for call in batch)])
        if any(isinstance(reply, NoScriptError) for reply in replies):
            # The server lost its scripts (a restart): load it and run the calls that
            # did not run; a NOSCRIPT reply means the call had no effect.
            self._script.sha = await self._client.script_load(self._script.script)
            again = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
            rerun = await self._execute([batch[i].value[0] for i in again])
            for i, reply in zip(again, rerun, strict=True):
                replies[i] = reply
        for call, reply in zip(batch, replies, strict=True):
            if isinstance(reply, Exception):
                call.fail(reply)
            else:
                call.resolve(reply)

    async def _execute(self, commands: list[Sequence[Any]]) -> list[Any]:
        if len(commands) == 1:
            # A pipeline costs more than a plain command: a lone call goes as one.
            try:
                return [await self._client.evalsha(self._script.sha, *commands[0])]
            except ResponseError as error:
                return [error]
        async with self._client.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.evalsha(self._script.sha, *command)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
            return replies

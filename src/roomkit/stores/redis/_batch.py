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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError

from roomkit.stores._batching import Batcher, Call

__all__ = ["ScriptBatcher"]


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
        self._batches: Batcher[Sequence[Any], Any] = Batcher(
            self._send, max_batch=max_batch, max_in_flight=max_in_flight
        )

    async def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """Run the script with ``keys`` and ``args``; its reply, or the error it raised.

        Raises:
            UnicodeEncodeError: a text holds a lone surrogate (nothing was sent).
            redis.exceptions.DataError: a value is of a type Redis cannot hold.
        """
        encode = self._encoder.encode
        return await self._batches.submit((len(keys), *map(encode, keys), *map(encode, args)))

    async def _send(self, batch: list[Call[Sequence[Any], Any]]) -> None:
        replies = await self._execute([call.value for call in batch])
        if any(isinstance(reply, NoScriptError) for reply in replies):
            # The server lost its scripts (a restart): load it and run the calls that
            # did not run; a NOSCRIPT reply means the call had no effect.
            self._script.sha = await self._client.script_load(self._script.script)
            again = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
            rerun = await self._execute([batch[i].value for i in again])
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

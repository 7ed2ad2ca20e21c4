"""The loop the durable stores batch their calls by: the calls of one loop turn, sent together.

Under load, most of a store call's cost is its trip to the server or the disk, not its
work there. A :class:`Batcher` queues each call with its future and, on the next loop turn,
hands up to ``max_batch`` of the queued calls to its store's ``run`` step (one pipeline,
one transaction), with at most ``max_in_flight`` batches running at once; calls made
meanwhile queue for the next. A lone call goes out on the next loop turn too, so an idle
store adds no delay.

``run`` settles each call of its batch on its own, so that one bad call fails only itself.
What ``run`` raises fails the calls it left unsettled (a fault of the whole batch); a call
whose caller was cancelled before its batch was taken is dropped, and a batch cancelled (the
loop is shutting down) cancels its calls and every call still queued: none of them will run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Batcher", "Call"]

C = TypeVar("C")
R = TypeVar("R")


class Call(Generic[C, R]):
    """One queued call: what the store's step runs, and the future its caller awaits."""

    __slots__ = ("future", "value")

    def __init__(self, value: C, future: asyncio.Future[R]) -> None:
        self.value = value
        """What the step runs."""
        self.future = future
        """What the caller awaits; already done when the caller was cancelled."""

    def resolve(self, result: R) -> None:
        """Hand ``result`` to the caller, unless it stopped waiting."""
        if not self.future.done():
            self.future.set_result(result)

    def fail(self, error: BaseException) -> None:
        """Raise ``error`` to the caller, unless it stopped waiting."""
        if not self.future.done():
            self.future.set_exception(error)


class Batcher(Generic[C, R]):
    """Queues calls and runs them, a loop turn's worth at a time, through ``run``.

    Args:
        run: the store's step: runs a batch and settles each of its calls (see the module
            docstring).
        max_batch: the most calls in one batch.
        max_in_flight: the most batches running at once.
        key: when given, two calls with the same key never share a batch: the second waits
            for the next one, in its turn.
    """

    def __init__(
        self,
        run: Callable[[list[Call[C, R]]], Awaitable[None]],
        *,
        max_batch: int,
        max_in_flight: int,
        key: Callable[[C], Hashable] | None = None,
    ) -> None:
        self._run = run
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._key = key
        self._queue: list[Call[C, R]] = []
        self._scheduled = False
        self._in_flight: set[asyncio.Task[None]] = set()

    async def submit(self, value: C) -> R:
        """Queue ``value`` and return what its batch's step settled it with.

        Raises:
            Exception: what the step failed the call with, or what failed its whole batch.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._queue.append(Call(value, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._dispatch)
        return await future

    async def wait_idle(self) -> None:
        """Return once every queued call has been run and no batch is running."""
        while self._queue or self._in_flight:
            if self._in_flight:
                await asyncio.wait(set(self._in_flight))
            else:
                # Nothing runs yet: the dispatch due on this loop turn starts the queue.
                await asyncio.sleep(0)

    def _dispatch(self) -> None:
        self._scheduled = False
        loop = asyncio.get_running_loop()
        while self._queue and len(self._in_flight) < self._max_in_flight:
            batch = self._take()
            if not batch:
                return
            task = loop.create_task(self._send(batch))
            self._in_flight.add(task)
            task.add_done_callback(self._sent)

    def _take(self) -> list[Call[C, R]]:
        """The next batch off the queue: its live calls, in order, with distinct keys."""
        batch: list[Call[C, R]] = []
        later: list[Call[C, R]] = []
        keys: set[Hashable] = set()
        for index, call in enumerate(self._queue):
            if len(batch) >= self._max_batch:
                later += self._queue[index:]
                break
            if call.future.done():
                continue
            if self._key is not None:
                key = self._key(call.value)
                if key in keys:
                    later.append(call)
                    continue
                keys.add(key)
            batch.append(call)
        self._queue = later
        return batch

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        if self._queue and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._dispatch)

    async def _send(self, batch: list[Call[C, R]]) -> None:
        try:
            await self._run(batch)
        except asyncio.CancelledError:
            # The loop is shutting down: nothing queued will run.
            for call in (*batch, *self._queue):
                call.future.cancel()
            self._queue.clear()
            raise
        except Exception as error:
            for call in batch:
                call.fail(error)

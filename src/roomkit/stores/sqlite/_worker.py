"""The thread a SQLite store's write transactions run on: one per connection, kept while used.

A write transaction runs whole on a thread (see :class:`~roomkit.stores.sqlite._link.Link`):
on a thread of the store's own rather than on the event loop's default executor, so that the
outcome goes back with one wake-up of the loop and nothing after it. The loop, woken, then
finds the thread waiting for its next call and the interpreter free; an executor's thread
goes on settling its own future first, and the loop waits that out. The thread ends once it
has had nothing to run for :data:`IDLE` seconds and starts again at the next call, so a store
that is never closed leaves no thread behind for long.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Generic, TypeVar

__all__ = ["IDLE", "Worker"]

T = TypeVar("T")

IDLE = 1.0
"""Seconds the thread waits for a call before it ends."""


class _Call(Generic[T]):
    """One call handed to the thread, and how its caller hears of it."""

    __slots__ = ("done", "finished", "landed", "loop", "run")

    def __init__(self, loop: asyncio.AbstractEventLoop, run: Callable[[], T]) -> None:
        self.loop = loop
        self.run = run
        self.landed: asyncio.Future[T] = loop.create_future()
        self.done = False
        # Made only for a caller cancelled while the thread runs its call: it waits on it.
        self.finished: asyncio.Future[None] | None = None


class Worker:
    """Runs calls one at a time, in order, on a thread that ends when idle.

    Args:
        name: the thread's name.
    """

    __slots__ = ("_calls", "_lock", "_name", "_running")

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[_Call[Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False

    async def run(self, run: Callable[[], T]) -> T:
        """``run()`` on the thread; a cancelled caller still waits for it to return.

        What ``run`` raises is raised here.
        """
        call = _Call(asyncio.get_running_loop(), run)
        self._calls.put(call)
        with self._lock:
            # Under the lock, after the put: a thread about to end either sees this call
            # queued and stays, or has already ended and another starts here.
            start, self._running = not self._running, True
        if start:
            threading.Thread(target=self._serve, name=self._name, daemon=True).start()
        try:
            return await call.landed
        except asyncio.CancelledError:
            if not call.done:
                # The connection is handed on only once the thread is done with it.
                call.finished = call.loop.create_future()
                await asyncio.wait((call.finished,))
            raise

    def _serve(self) -> None:
        calls = self._calls
        while True:
            try:
                call = calls.get(timeout=IDLE)
            except queue.Empty:
                with self._lock:
                    # Under the lock: a call queued before this look is run, and one queued
                    # after it finds the thread gone and starts another.
                    if calls.empty():
                        self._running = False
                        return
                continue
            try:
                outcome: tuple[Any, BaseException | None] = (call.run(), None)
            except BaseException as error:
                outcome = (None, error)
            with suppress(RuntimeError):  # the loop closed meanwhile: nobody is listening
                call.loop.call_soon_threadsafe(_hand, call, *outcome)
            del call, outcome


def _hand(call: _Call[Any], result: Any, error: BaseException | None) -> None:
    """On the loop: give the caller the outcome, unless it stopped listening."""
    call.done = True
    landed = call.landed
    if not landed.done():
        if error is None:
            landed.set_result(result)
        else:
            landed.set_exception(error)
    finished = call.finished
    if finished is not None and not finished.done():
        finished.set_result(None)

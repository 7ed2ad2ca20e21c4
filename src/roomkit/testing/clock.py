"""A fake clock for testing timeouts without waiting.

:class:`VirtualClockLoop` is an asyncio event loop whose ``time()`` is virtual: whenever
nothing is ready to run and no I/O is waiting, the clock jumps straight to the next scheduled
timer instead of sleeping. ``await asyncio.sleep(3600)`` returns at once with
``loop.time()`` one hour later, and a ``wait(..., timeout=300)`` that nobody answers times out
in microseconds of real time, in the same order it would in real time.

Work the loop handed to a thread (``asyncio.to_thread``, ``loop.run_in_executor``) is waited
for before the clock jumps, up to ``thread_wait`` real seconds a job (5 by default): a file
read in a thread finishes at the same virtual time it began, however busy the machine is.
Sockets are not waited for: a peer that would answer in a few real milliseconds loses to a
timer that is scheduled. Use the loop for code whose outcome depends on the loop's own
timers, not on real network latency.

::

    import asyncio

    from roomkit.testing import run_virtual
    from roomkit.tools.human_input import HumanInputHandler

    async def main() -> float:
        handler = HumanInputHandler()
        pending = await handler.create("AskUserQuestion", {"question": "Color?"})
        try:
            await handler.wait(pending.pending_id, timeout=300)
        except TimeoutError:
            pass
        return asyncio.get_running_loop().time()

    assert run_virtual(main()) == 300.0

With pytest-asyncio, run a directory's async tests on it from its ``conftest.py``::

    def pytest_asyncio_loop_factories(config, item):
        return {"virtual_clock": VirtualClockLoop}
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from _typeshed import FileDescriptorLike

__all__ = ["VirtualClockLoop", "advance", "run_virtual", "virtual_runner"]

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")

_SelectResult = list[tuple[selectors.SelectorKey, int]]


class _VirtualSelector(selectors.BaseSelector):
    """A selector that polls its inner selector and advances the clock instead of blocking.

    While a thread works for the loop, it waits (really) for the thread's answer first.
    """

    def __init__(
        self, inner: selectors.BaseSelector, advance: Callable[[float], None], thread_wait: float
    ) -> None:
        self._inner = inner
        self._advance = advance
        self.thread_wait = thread_wait
        self.jobs: dict[int, float] = {}
        """The jobs in threads, by id: the real time past which the clock stops waiting."""

    def _real_wait(self) -> float:
        """Real seconds to wait for a thread's answer before the clock may jump."""
        if not self.jobs:
            return 0.0
        now = time.monotonic()
        return max(0.0, max(self.jobs.values()) - now)

    def register(
        self, fileobj: FileDescriptorLike, events: int, data: Any = None
    ) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: FileDescriptorLike) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(
        self, fileobj: FileDescriptorLike, events: int, data: Any = None
    ) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> _SelectResult:
        if timeout is None:
            # No timer is scheduled: only I/O (or another thread) can wake the loop.
            return self._inner.select(None)
        events = self._inner.select(0)
        if not events and timeout > 0:
            # A thread's answer wakes the loop through its self-pipe: the clock stands still.
            wait = self._real_wait()
            if wait > 0:
                return self._inner.select(wait)
            self._advance(timeout)
        return events

    def close(self) -> None:
        self._inner.close()

    def get_key(self, fileobj: FileDescriptorLike) -> selectors.SelectorKey:
        return self._inner.get_key(fileobj)

    def get_map(self) -> Mapping[FileDescriptorLike, selectors.SelectorKey]:
        return self._inner.get_map()


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock jumps to the next timer whenever the loop would sleep.

    Ready callbacks and I/O run as on any selector loop; only the waiting is skipped. Timers
    fire in the order of their deadlines, and ``time()`` reads exactly the deadline of the
    timer being run, so code that computes deadlines from ``loop.time()`` sees consistent
    arithmetic.

    Args:
        selector: the real selector to poll for I/O; a ``selectors.DefaultSelector`` when
            ``None``.
        start: the virtual time the clock starts at, in seconds.
        thread_wait: the real seconds the clock waits, at most, for a job handed to a
            thread (``run_in_executor``, ``asyncio.to_thread``) before it jumps anyway;
            ``0`` never waits.

    Raises:
        ValueError: ``thread_wait`` is negative or not a finite number.
    """

    def __init__(
        self,
        selector: selectors.BaseSelector | None = None,
        *,
        start: float = 0.0,
        thread_wait: float = 5.0,
    ) -> None:
        self._virtual_now = float(start)
        inner = selector if selector is not None else selectors.DefaultSelector()
        self._waits = _VirtualSelector(inner, self._advance, 0.0)
        super().__init__(self._waits)
        if not 0 <= thread_wait < float("inf"):
            self.close()
            raise ValueError(
                f"thread_wait must be a finite number of seconds >= 0, not {thread_wait!r}"
            )
        self._waits.thread_wait = float(thread_wait)

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[*_Ts], _T], *args: *_Ts
    ) -> asyncio.Future[_T]:
        """As on any loop; the clock waits for the job's answer before it jumps."""
        future = super().run_in_executor(executor, func, *args)
        waits = self._waits
        if waits.thread_wait:
            jobs = waits.jobs
            jobs[id(future)] = time.monotonic() + waits.thread_wait
            future.add_done_callback(lambda done: jobs.pop(id(done), None))
        return future

    def time(self) -> float:
        """The virtual time, in seconds; it moves only when the loop would otherwise sleep."""
        return self._virtual_now

    def _advance(self, seconds: float) -> None:
        self._virtual_now += seconds


def virtual_runner(*, debug: bool | None = None) -> asyncio.Runner:
    """An :class:`asyncio.Runner` whose loop is a :class:`VirtualClockLoop`.

    Use it to run several coroutines on one virtual clock::

        with virtual_runner() as runner:
            handler = runner.run(make_handler())
            runner.run(exercise(handler))
    """
    return asyncio.Runner(debug=debug, loop_factory=VirtualClockLoop)


def run_virtual(coro: Coroutine[Any, Any, _T], *, debug: bool | None = None) -> _T:
    """Run ``coro`` to completion on a fresh :class:`VirtualClockLoop`, like ``asyncio.run``.

    Timeouts and sleeps inside take no real time.
    """
    with virtual_runner(debug=debug) as runner:
        return runner.run(coro)


async def advance(seconds: float) -> None:
    """Let ``seconds`` pass on the virtual clock: timers due by then fire, at once.

    Raises:
        RuntimeError: the running loop is not a :class:`VirtualClockLoop` (a real loop would
            really wait).
    """
    if not isinstance(asyncio.get_running_loop(), VirtualClockLoop):
        raise RuntimeError("advance() needs a VirtualClockLoop: use run_virtual() or the runner")
    await asyncio.sleep(seconds)

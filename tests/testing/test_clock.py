"""The virtual clock: timers fire in order without real waiting; I/O and threads still work."""

from __future__ import annotations

import asyncio
import selectors
import socket
import textwrap
import threading
from typing import Any

import pytest

import roomkit.testing
import roomkit.testing.clock
from roomkit.testing import VirtualClockLoop, advance, run_virtual, virtual_runner


def test_the_testing_package_exports_the_clock() -> None:
    assert set(roomkit.testing.__all__) >= {"VirtualClockLoop", "run_virtual", "virtual_runner"}
    assert issubclass(VirtualClockLoop, asyncio.SelectorEventLoop)


def test_an_hour_of_sleep_passes_at_once() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await advance(3600)
        return start, loop.time()

    start, end = run_virtual(main())

    assert end - start == 3600


def test_a_sleep_longer_than_a_day_advances_exactly() -> None:
    """The loop caps one select at a day; the clock crosses several caps exactly."""

    async def main() -> float:
        await advance(10 * 86_400 + 0.5)
        return asyncio.get_running_loop().time()

    assert run_virtual(main()) == 10 * 86_400 + 0.5


def test_timers_fire_in_deadline_order_at_their_deadline() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        fired: list[tuple[str, float]] = []
        done = loop.create_future()
        for label, delay in [("c", 30.0), ("a", 0.25), ("d", 3600.0), ("b", 7.5)]:
            loop.call_later(delay, lambda label=label: fired.append((label, loop.time())))
        loop.call_later(3600.5, done.set_result, None)
        await done
        return fired

    assert run_virtual(main()) == [("a", 0.25), ("b", 7.5), ("c", 30.0), ("d", 3600.0)]


def test_sleeping_tasks_wake_in_order() -> None:
    async def main() -> list[float]:
        woke: list[float] = []

        async def nap(seconds: float) -> None:
            await advance(seconds)
            woke.append(seconds)

        await asyncio.gather(*(nap(s) for s in (5, 1, 300, 0.1, 60)))
        return woke

    assert run_virtual(main()) == [0.1, 1, 5, 60, 300]


def test_ready_callbacks_run_before_the_clock_moves() -> None:
    async def main() -> tuple[list[float], float]:
        loop = asyncio.get_running_loop()
        seen: list[float] = []
        done = loop.create_future()

        def hop(left: int) -> None:
            seen.append(loop.time())
            if left:
                loop.call_soon(hop, left - 1)
            else:
                done.set_result(None)

        loop.call_later(10, lambda: None)
        loop.call_soon(hop, 50)
        await done
        return seen, loop.time()

    seen, now = run_virtual(main())

    assert seen == [0.0] * 51
    assert now == 0.0


def test_timeouts_use_the_virtual_clock() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=300)
        return loop.time()

    assert run_virtual(main()) == 300


def test_ready_io_is_served_before_the_clock_jumps() -> None:
    async def main() -> tuple[bytes, float]:
        loop = asyncio.get_running_loop()
        left, right = socket.socketpair()
        with left, right:
            left.setblocking(False)
            right.setblocking(False)
            loop.call_later(1000, lambda: None)
            right.send(b"ping")
            data = await loop.sock_recv(left, 4)
        return data, loop.time()

    assert run_virtual(main()) == (b"ping", 0.0)


def test_work_in_a_thread_completes_when_no_timer_is_due() -> None:
    async def main() -> tuple[int, float]:
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, sum, [1, 2, 3])
        return result, loop.time()

    assert run_virtual(main()) == (6, 0.0)


class GateOpenedWhenWaited(selectors.DefaultSelector):
    """A real selector that opens ``gate`` when the loop really waits on it with a timer due."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout:
            self.gate.set()
        return super().select(timeout)


def on_loop(loop: VirtualClockLoop, gate: threading.Event, main: Any) -> Any:
    """Run ``main()`` on ``loop``, then open the gate so that no thread is left blocked."""
    try:
        return loop.run_until_complete(main())
    finally:
        gate.set()
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def test_a_thread_answers_before_a_timer_that_is_due_fires() -> None:
    """The thread's job ends only once the loop really waits: the clock stands still for it."""
    gate = threading.Event()

    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        opened = await asyncio.wait_for(asyncio.to_thread(gate.wait, 30), timeout=1)
        return opened, loop.time()

    loop = VirtualClockLoop(GateOpenedWhenWaited(gate))
    assert on_loop(loop, gate, main) == (True, 0.0)


@pytest.mark.parametrize("thread_wait", [0, 0.05])
def test_a_timer_wins_once_the_thread_wait_is_spent(thread_wait: float) -> None:
    """With ``thread_wait=0`` the clock never waits; past its ``thread_wait`` a job that has
    not answered no longer holds the clock."""
    gate = threading.Event()

    async def main() -> float:
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.to_thread(gate.wait, 30), timeout=1)
        return loop.time()

    loop = VirtualClockLoop(thread_wait=thread_wait)
    assert on_loop(loop, gate, main) == 1.0


@pytest.mark.parametrize("thread_wait", [-1, float("inf"), float("nan")])
def test_a_thread_wait_that_is_no_finite_duration_is_refused(thread_wait: float) -> None:
    with pytest.raises(ValueError, match="thread_wait"):
        VirtualClockLoop(thread_wait=thread_wait)


def test_another_thread_can_wake_an_idle_loop() -> None:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        thread = threading.Thread(
            target=loop.call_soon_threadsafe, args=(answer.set_result, "from thread")
        )
        thread.start()
        try:
            return await answer
        finally:
            thread.join()

    assert run_virtual(main()) == "from thread"


def test_the_clock_can_start_elsewhere() -> None:
    loop = VirtualClockLoop(start=1_000.0)
    try:
        assert loop.time() == 1_000.0
        loop.run_until_complete(advance(5))
        assert loop.time() == 1_005.0
    finally:
        loop.close()


def test_a_virtual_runner_keeps_one_clock_across_runs() -> None:
    with virtual_runner() as runner:
        loop = runner.get_loop()
        runner.run(advance(10))
        runner.run(advance(5))

        assert isinstance(loop, VirtualClockLoop)
        assert loop.time() == 15


def test_run_virtual_returns_the_result_on_a_fresh_clock() -> None:
    async def now() -> float:
        await advance(42)
        return asyncio.get_running_loop().time()

    assert run_virtual(now()) == 42
    assert run_virtual(now()) == 42


def test_run_virtual_propagates_errors() -> None:
    async def fail() -> None:
        await advance(1)
        raise LookupError("boom")

    with pytest.raises(LookupError, match="boom"):
        run_virtual(fail())


def test_the_documented_example_runs() -> None:
    doc = roomkit.testing.clock.__doc__ or ""
    example = doc.split("::\n\n", 1)[1].split("\n\nWith pytest-asyncio", 1)[0]

    exec(textwrap.dedent(example), {})


async def test_advance_refuses_a_real_loop() -> None:
    with pytest.raises(RuntimeError, match="VirtualClockLoop"):
        await advance(1)


def test_advance_moves_the_virtual_clock() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await advance(90)
        return loop.time() - start

    assert run_virtual(main()) == 90

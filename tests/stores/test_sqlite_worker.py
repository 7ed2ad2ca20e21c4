"""The thread a SQLite store's writes run on: calls in order, outcomes back, gone when idle."""

from __future__ import annotations

import asyncio
import queue
import threading

import pytest

from roomkit.stores.sqlite import _worker
from roomkit.stores.sqlite._worker import Worker

PATIENCE = 10.0


async def test_calls_run_in_order_on_one_thread_and_their_outcomes_come_back() -> None:
    worker = Worker("roomkit sqlite test")
    ran: list[tuple[int, threading.Thread]] = []

    def call(n: int) -> int:
        ran.append((n, threading.current_thread()))
        if n == 2:
            raise KeyError("two")
        return n * 10

    outcomes = await asyncio.gather(
        *(worker.run(lambda n=n: call(n)) for n in range(4)), return_exceptions=True
    )

    assert outcomes[:2] == [0, 10]
    assert isinstance(outcomes[2], KeyError)
    assert outcomes[3] == 30
    assert [n for n, _ in ran] == [0, 1, 2, 3]
    assert len({thread for _, thread in ran}) == 1
    assert ran[0][1] is not threading.current_thread()
    assert ran[0][1].name == "roomkit sqlite test"


async def test_an_idle_thread_ends_and_the_next_call_starts_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker that is never closed leaves no thread behind once idle."""
    monkeypatch.setattr(_worker, "IDLE", 0.01)
    worker = Worker("roomkit sqlite idle")

    first = await worker.run(threading.current_thread)
    await asyncio.to_thread(first.join, PATIENCE)
    second = await worker.run(threading.current_thread)

    assert not first.is_alive()
    assert second is not first
    assert await worker.run(lambda: 42) == 42


async def test_a_cancelled_caller_returns_once_its_call_has() -> None:
    worker = Worker("roomkit sqlite cancel")
    started, release = threading.Event(), threading.Event()
    returned: list[bool] = []

    def slow() -> None:
        started.set()
        release.wait(PATIENCE)
        returned.append(True)

    cut = asyncio.create_task(worker.run(slow))
    await asyncio.to_thread(started.wait, PATIENCE)
    cut.cancel()
    done, _ = await asyncio.wait({cut}, timeout=0.05)
    release.set()

    assert not done
    with pytest.raises(asyncio.CancelledError):
        await cut
    assert returned == [True]


class _EndingQueue:
    """The worker's queue, holding its thread between finding nothing queued and ending
    until a call is put: the moment a call can come in as the thread goes."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.ending, self.put_one = threading.Event(), threading.Event()
        self.held = False

    def get(self, timeout: float | None = None) -> object:
        return self.calls.get(timeout=timeout)

    def put(self, call: object) -> None:
        self.calls.put(call)
        self.put_one.set()

    def empty(self) -> bool:
        found_empty = self.calls.empty()
        if found_empty and not self.held:
            self.held = True
            self.put_one.clear()
            self.ending.set()
            self.put_one.wait(PATIENCE)
        return found_empty


async def test_a_call_made_as_the_idle_thread_ends_still_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call queued between the thread's last look and its end starts another thread."""
    monkeypatch.setattr(_worker, "IDLE", 0.01)
    worker = Worker("roomkit sqlite ending")
    calls = _EndingQueue()
    worker._calls = calls  # type: ignore[assignment]
    await worker.run(lambda: None)
    await asyncio.to_thread(calls.ending.wait, PATIENCE)

    # Not cancelled on failure: a cancelled caller waits for its call, which would never run.
    late = asyncio.ensure_future(worker.run(lambda: 42))
    await asyncio.wait((late,), timeout=PATIENCE)
    assert late.done(), "the call queued as the thread ended never ran"
    assert late.result() == 42

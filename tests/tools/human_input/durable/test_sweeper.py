"""The sweeper of durable waits outlives whatever one request does to it.

Each store here runs on a fake clock: the test moves time past the deadlines, and the
sweeper (which wakes every backstop interval) sees them pass and records the timeouts.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.tools.human_input.durable.cross_process_peer import parked
from tests.tools.human_input.stores.store_kit import PATIENCE, FakeClock, logged

from roomkit.core.exceptions import HumanInputTimeoutError, StoreClosedError, StoreError
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

SWEEPER = "human-input-durable-sweeper"
QUESTION = {"question": "Anyone there?"}


class Durable:
    """A handler on a real store, and a way to make one record refuse to be settled."""

    def __init__(self, store: SQLiteStore | RedisStore, refuse: Callable[[str], Awaitable[None]]):
        self.store = store
        self.handler = HumanInputHandler(store=store)
        self.refuse_settling = refuse


class FlakyClock(FakeClock):
    """A fake clock that fails the next ``faults`` readings the sweeper takes."""

    def __init__(self) -> None:
        super().__init__()
        self.faults = 0

    def __call__(self) -> float:
        task = asyncio.current_task()
        if self.faults and task is not None and task.get_name() == SWEEPER:
            self.faults -= 1
            raise RuntimeError("the clock cannot be read")
        return super().__call__()


@pytest.fixture
def clock() -> FlakyClock:
    return FlakyClock()


@pytest.fixture(params=["sqlite", "redis"])
async def durable(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Durable]:
    if request.param == "sqlite":
        path = tmp_path / "pending.db"
        sqlite_store = SQLiteStore(path, clock=clock, backstop_interval=0.02)
        await sqlite_store.open()

        async def refuse(pending_id: str) -> None:
            # The file refuses to record any outcome for this one record.
            with closing(sqlite3.connect(path)) as db, db:
                db.execute(
                    "CREATE TRIGGER refuse_settle BEFORE UPDATE OF status ON roomkit_pending "
                    f"WHEN OLD.pending_id = '{pending_id}' "
                    "BEGIN SELECT RAISE(ABORT, 'this record cannot be settled'); END"
                )

        yield Durable(sqlite_store, refuse)
        await sqlite_store.close()
        return
    url = request.getfixturevalue("redis_server").url
    prefix = f"t{os.urandom(6).hex()}"
    redis_store = RedisStore(url, prefix=prefix, clock=clock, backstop_interval=0.05)
    raw = Redis.from_url(url, decode_responses=True)

    async def refuse(pending_id: str) -> None:
        # A deadline Python reads (10.0) and the server's script does not: every settle
        # of this record is refused as corrupt, while reading it works.
        await raw.hset(f"{prefix}:p:{pending_id}", "deadline", "1_0")  # type: ignore[misc]

    yield Durable(redis_store, refuse)
    await redis_store.close()
    await raw.aclose()


async def test_a_request_that_cannot_be_timed_out_ends_alone(
    durable: Durable, clock: FakeClock
) -> None:
    """Its waits end with the store's error; the other waits still time out on time."""
    handler = durable.handler
    broken = await handler.create("AskUserQuestion", QUESTION, timeout=5)
    later = await handler.create("AskUserQuestion", QUESTION, timeout=50)
    await durable.refuse_settling(broken.pending_id)
    waits = [
        asyncio.create_task(handler.wait(request.pending_id, timeout=None))
        for request in (broken, later)
    ]

    clock.advance(10)
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(StoreError):
            await waits[0]
    assert not waits[1].done()

    clock.advance(50)
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(HumanInputTimeoutError):
            await waits[1]
    assert await handler.aresolve(later.pending_id, "too late") is False


async def test_a_cancelled_sweeper_is_replaced_while_waits_remain(
    durable: Durable, clock: FakeClock
) -> None:
    sweepers: list[asyncio.Task[Any]] = []
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def note(task: asyncio.Task[Any]) -> None:
        # By the time this runs, the task has its name.
        if task.get_name() == SWEEPER:
            sweepers.append(task)
            started.set()

    def factory(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **options: Any
    ) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **options)
        loop.call_soon(note, task)
        return task

    handler = durable.handler
    request = await handler.create("AskUserQuestion", QUESTION, timeout=5)
    loop.set_task_factory(factory)  # type: ignore[arg-type]
    try:
        waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
        async with asyncio.timeout(PATIENCE):
            await started.wait()
        started.clear()
        with logged("roomkit.tools.human_input", "was cancelled") as reported:
            sweepers[0].cancel()
            async with asyncio.timeout(PATIENCE):
                await started.wait()
                await reported.wait()
    finally:
        loop.set_task_factory(None)

    clock.advance(10)
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(HumanInputTimeoutError):
            await waiting
    assert len(sweepers) == 2


async def test_a_store_closed_under_the_waits_ends_them_and_is_no_sweeper_failure(
    durable: Durable,
) -> None:
    """The sweeper ends each wait with StoreClosedError and ends itself: nothing to report,
    and nothing to start again."""
    handler = durable.handler
    requests = [await handler.create("AskUserQuestion", QUESTION) for _ in range(2)]
    waits = [
        asyncio.create_task(handler.wait(request.pending_id, timeout=None)) for request in requests
    ]
    async with asyncio.timeout(PATIENCE):
        await parked(handler, 2, waits)
    (sweeper,) = [task for task in asyncio.all_tasks() if task.get_name() == SWEEPER]

    with logged("roomkit.tools.human_input", "sweeper of durable waits") as reported:
        await durable.store.close()
        async with asyncio.timeout(PATIENCE):
            await sweeper  # its one callback has run by now: it was added first
            for wait in waits:
                with pytest.raises(StoreClosedError):
                    await wait
    assert not reported.is_set()
    assert not [task for task in asyncio.all_tasks() if task.get_name() == SWEEPER]
    assert handler.statistics().parked_waits == 0


async def test_a_fault_no_request_explains_is_retried(durable: Durable, clock: FlakyClock) -> None:
    """The sweeper logs it, carries on, and the wait still times out."""
    handler = durable.handler
    request = await handler.create("AskUserQuestion", QUESTION, timeout=5)

    with logged("roomkit.tools.human_input", "failed: retrying") as reported:
        clock.faults = 1
        waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
        async with asyncio.timeout(PATIENCE):
            await reported.wait()

    clock.advance(10)
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(HumanInputTimeoutError):
            await waiting
    assert clock.faults == 0


def callbacks_on_the_sweeper() -> int:
    """How many done callbacks the running sweeper task carries (asyncio's own list)."""
    (sweeper,) = [task for task in asyncio.all_tasks() if task.get_name() == SWEEPER]
    return len(sweeper._callbacks or ())


async def test_the_sweeper_carries_one_callback_however_many_waits_are_parked(
    durable: Durable,
) -> None:
    """A wait never registers on the shared task: ending n waits costs n steps, not n²."""
    handler = durable.handler
    requests = [await handler.create("AskUserQuestion", QUESTION) for _ in range(40)]
    waits = [asyncio.create_task(handler.wait(requests[0].pending_id, timeout=None))]
    async with asyncio.timeout(PATIENCE):
        await parked(handler, 1, waits)
    assert callbacks_on_the_sweeper() == 1

    waits.append(asyncio.create_task(handler.wait(requests[0].pending_id, timeout=60)))
    waits += [
        asyncio.create_task(handler.wait(request.pending_id, timeout=None))
        for request in requests[1:]
    ]
    async with asyncio.timeout(PATIENCE):
        await parked(handler, 41, waits)
    assert callbacks_on_the_sweeper() == 1
    figures = handler.statistics()
    assert (figures.parked_waits, figures.armed_deadlines) == (41, 1)

    for n, request in enumerate(requests):
        assert await handler.aresolve(request.pending_id, f"answer {n}")
    async with asyncio.timeout(PATIENCE):
        answers = await asyncio.gather(*waits)
    assert answers == ["answer 0", "answer 0", *(f"answer {n}" for n in range(1, 40))]
    figures = handler.statistics()
    assert (figures.parked_waits, figures.armed_deadlines) == (0, 0)


async def test_every_wait_carries_on_past_a_cancelled_sweeper(
    durable: Durable, clock: FakeClock
) -> None:
    """Two waits on one request and one on another: each hears the sweeper ended."""
    handler = durable.handler
    first = await handler.create("AskUserQuestion", QUESTION, timeout=5)
    second = await handler.create("AskUserQuestion", QUESTION)
    waits = [
        asyncio.create_task(handler.wait(request.pending_id, timeout=None))
        for request in (first, first, second)
    ]
    async with asyncio.timeout(PATIENCE):
        await parked(handler, 3, waits)
    (sweeper,) = [task for task in asyncio.all_tasks() if task.get_name() == SWEEPER]

    with logged("roomkit.tools.human_input", "was cancelled") as reported:
        sweeper.cancel()
        async with asyncio.timeout(PATIENCE):
            await reported.wait()
    assert await handler.aresolve(second.pending_id, "here")
    clock.advance(10)
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(HumanInputTimeoutError):
            await waits[0]
        with pytest.raises(HumanInputTimeoutError):
            await waits[1]
        assert await waits[2] == "here"
    assert handler.statistics().parked_waits == 0


async def test_the_deadline_still_watched_outlives_many_that_ended(
    durable: Durable, clock: FakeClock
) -> None:
    """Deadlines left behind by answered waits are dropped; the one still waited on fires."""
    handler = durable.handler
    answered = [await handler.create("AskUserQuestion", QUESTION) for _ in range(100)]
    later = await handler.create("AskUserQuestion", QUESTION)
    waits = [
        asyncio.create_task(handler.wait(request.pending_id, timeout=5 + n / 100))
        for n, request in enumerate(answered)
    ]
    waits.append(asyncio.create_task(handler.wait(later.pending_id, timeout=50)))
    async with asyncio.timeout(PATIENCE):
        await parked(handler, 101, waits)
    assert handler.statistics().armed_deadlines == 101

    for request in reversed(answered):
        assert await handler.aresolve(request.pending_id, "yes")
    async with asyncio.timeout(PATIENCE):
        assert await asyncio.gather(*waits[:-1]) == ["yes"] * 100
    assert handler.statistics().armed_deadlines == 1

    clock.advance(60)
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(HumanInputTimeoutError):
            await waits[-1]
    assert handler.statistics().armed_deadlines == 0

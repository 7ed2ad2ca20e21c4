"""A SQLite store's write that finds no other queued or running runs at once, in its
caller's task; writes called meanwhile share the next transaction, as before."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from roomkit.core.exceptions import StoreError
from roomkit.stores.sqlite._batch import Unsynced, WriteBatcher
from roomkit.stores.sqlite._link import Link, query

PATIENCE = 10.0


class Ends:
    """How each transaction of a batcher ended."""

    def __init__(self) -> None:
        self.committed = 0
        self.aborted = 0


@pytest.fixture
async def link(tmp_path: Path) -> AsyncIterator[Link]:
    link = Link(str(tmp_path / "writes.db"), busy_timeout=PATIENCE, on_open=lambda counter: None)
    yield link
    await link.close()


def batcher(link: Link, ends: Ends) -> WriteBatcher:
    def committed() -> None:
        ends.committed += 1

    def aborted() -> None:
        ends.aborted += 1

    return WriteBatcher(
        link, clock=time.time, durable=lambda: None, committed=committed, aborted=aborted
    )


def make_table(db: sqlite3.Connection, now: float) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS written (n INTEGER)")


class Held:
    """A write that writes ``n`` once released, having said it started: it holds the thread."""

    def __init__(self, n: int, result: object = None) -> None:
        self.n, self.result = n, result
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, db: sqlite3.Connection, now: float) -> object:
        self.started.set()
        self.release.wait(PATIENCE)
        db.execute("INSERT INTO written VALUES (?)", (self.n,))
        return self.result

    async def running(self) -> None:
        """Return once the thread runs it."""
        await asyncio.to_thread(self.started.wait, PATIENCE)


async def test_writes_called_while_a_lone_one_runs_share_the_next_transaction(
    link: Link,
) -> None:
    ends = Ends()
    writes = batcher(link, ends)
    await writes.run(make_table)
    slow = Held(0, "alone")

    def add(n: int) -> Callable[[sqlite3.Connection, float], int]:
        def write(db: sqlite3.Connection, now: float) -> int:
            db.execute("INSERT INTO written VALUES (?)", (n,))
            return n

        return write

    alone = asyncio.create_task(writes.run(slow))
    await slow.running()
    queued = [asyncio.create_task(writes.run(add(n))) for n in (1, 2, 3)]
    slow.release.set()

    assert await alone == "alone"
    assert await asyncio.gather(*queued) == [1, 2, 3]
    # The table's write, the lone write, then one batch for the three queued behind it.
    assert ends.committed == 3
    rows = await writes.run(lambda db, now: query(db, "SELECT n FROM written ORDER BY n"))
    assert rows == [(0,), (1,), (2,), (3,)]


async def test_a_lone_write_cancelled_on_the_thread_is_left_for_the_feed_to_find(
    link: Link,
) -> None:
    """Its caller hears the cancellation once the thread is done; its commit landed, and the
    transaction's abnormal end tells the change feed to look (it is no one's to report)."""
    ends = Ends()
    writes = batcher(link, ends)
    await writes.run(make_table)
    slow = Held(7)

    cut = asyncio.create_task(writes.run(slow))
    await slow.running()
    cut.cancel()
    slow.release.set()

    with pytest.raises(asyncio.CancelledError):
        await cut
    assert link.dirty is True
    assert ends.aborted == 1
    await writes.wait_idle()
    assert await writes.run(lambda db, now: query(db, "SELECT n FROM written")) == [(7,)]


async def test_a_lone_write_that_breaks_or_refuses_fails_alone_and_the_next_runs(
    link: Link,
) -> None:
    """What a lone write raises reaches its caller as it would from a batch: a write that
    breaks is rolled back, one that refuses commits nothing of its own."""
    ends = Ends()
    writes = batcher(link, ends)

    def broken(db: sqlite3.Connection, now: float) -> None:
        db.execute("CREATE TABLE never (n INTEGER)")
        raise ValueError("broken")

    def refusing(db: sqlite3.Connection, now: float) -> None:
        raise StoreError("refused")

    with pytest.raises(ValueError, match="broken"):
        await writes.run(broken)
    with pytest.raises(StoreError, match="refused"):
        await writes.run(refusing)
    await writes.run(make_table)

    names = "SELECT name FROM sqlite_master WHERE name IN ('never', 'written')"
    tables = await writes.run(lambda db, now: query(db, names))
    assert tables == [("written",)]
    assert (ends.committed, ends.aborted) == (3, 1)


def level(db: sqlite3.Connection, now: float) -> int:
    """The ``synchronous`` level the transaction commits at."""
    ((found,),) = query(db, "PRAGMA synchronous")
    return int(found)


async def test_unsynced_writes_alone_commit_at_normal_and_with_others_at_full(
    link: Link,
) -> None:
    """A transaction of :class:`Unsynced` writes alone commits at ``NORMAL``; one that any
    other write shares, and every write after them, at the link's ``FULL``."""
    normal, full = 1, 2
    ends = Ends()
    writes = batcher(link, ends)
    await writes.run(make_table)

    async def batched(*batch: Callable[[sqlite3.Connection, float], int]) -> list[int]:
        """What each of ``batch`` returns, run in one transaction behind a lone write."""
        slow = Held(0)
        alone = asyncio.create_task(writes.run(slow))
        await slow.running()
        queued = [asyncio.create_task(writes.run(write)) for write in batch]
        slow.release.set()
        await alone
        return await asyncio.gather(*queued)

    assert await writes.run(Unsynced(level)) == normal
    assert await writes.run(level) == full
    assert await batched(Unsynced(level), Unsynced(level)) == [normal, normal]
    assert await batched(Unsynced(level), level) == [full, full]
    assert await writes.run(level) == full
    # The table, four lone writes, a slow one before each batch and the two batches.
    assert ends.committed == 8

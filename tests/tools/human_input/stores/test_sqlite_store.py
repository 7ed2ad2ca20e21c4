"""What only the SQLite store does: its file in WAL mode, group commit (a fault of SQLite
fails the batch whole, a cancelled write drops out, close lets queued writes finish; a write
that breaks alone is in ``test_store_text.py``), purges on insert, an insert refused by a
constraint other than the id told apart from an id stored already,
a feed that counts from the clock before it connects, and the faults of a file: a path that
cannot be opened, a lock held too long, a directory that appears later.

What every durable store does is in ``test_durable_store_contract.py``."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import (
    PATIENCE,
    PENDING,
    REJECTED,
    RESOLVED,
    RESYNC,
    SETTLED,
    Changes,
    FakeClock,
    logged,
    make_request,
    sqlite_insert_raw,
    sqlite_stored_ids,
)

from roomkit.core.exceptions import CorruptRecordError, StoreError, StoreUnavailableError
from roomkit.stores import PendingChange
from roomkit.stores.sqlite import SQLiteStore
from roomkit.stores.sqlite._link import Link, query

LOGGER = "roomkit.tools.human_input.stores.sqlite"
NOW_TEXT = "2030-01-01T00:00:00Z"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "pending.db"


@pytest.fixture
async def store(db_path: Path, clock: FakeClock) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(db_path, clock=clock, retention_seconds=3600) as store:
        yield store


async def test_the_file_is_in_wal_mode(db_path: Path) -> None:
    async with SQLiteStore(db_path):
        pass

    with closing(sqlite3.connect(db_path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# -- settles of records the store did not write ----------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {"format": "someone.else.v3"},
        {"arguments": "[1, 2"},
        {"deadline": "soon"},
        {"status": "lost"},
    ],
)
async def test_a_settle_of_a_foreign_record_writes_nothing_beside_the_writes_it_ran_with(
    store: SQLiteStore, db_path: Path, overrides: dict[str, str]
) -> None:
    """Whether the settle finds the record unreadable before its update (its status or
    deadline) or only in the record the update returns (its other fields), the record, its
    history and the change counter stay as they were, and the settle run in the same
    transaction lands."""
    sqlite_insert_raw(db_path, **overrides)
    request, _ = await store.insert(make_request())

    def read(*statements: str) -> list[Any]:
        with closing(sqlite3.connect(db_path)) as db:
            return [db.execute(statement).fetchall() for statement in statements]

    before = read(
        "SELECT * FROM roomkit_pending WHERE pending_id = 'alien'",
        "SELECT * FROM roomkit_history WHERE pending_id = 'alien'",
    )
    (counter_before,) = read("SELECT value FROM roomkit_pending_seq")
    settled = asyncio.create_task(store.settle(request.pending_id, RESOLVED, result="y"))
    with pytest.raises(CorruptRecordError):
        await store.settle(
            "alien", RESOLVED, result="x", history=({"type": "settled", "at": NOW_TEXT},)
        )
    won = await settled

    assert won is not None
    assert won.result == "y"
    assert (
        read(
            "SELECT * FROM roomkit_pending WHERE pending_id = 'alien'",
            "SELECT * FROM roomkit_history WHERE pending_id = 'alien'",
        )
        == before
    )
    assert read("SELECT value FROM roomkit_pending_seq") == [[(counter_before[0][0] + 1,)]]


# -- group commit ----------------------------------------------------------------------------


async def test_a_write_cancelled_before_its_turn_is_dropped(store: SQLiteStore) -> None:
    kept, _ = await store.insert(make_request())
    dropped, _ = await store.insert(make_request())

    first = asyncio.create_task(store.settle(kept.pending_id, RESOLVED, result="kept"))
    second = asyncio.create_task(store.settle(dropped.pending_id, RESOLVED, result="dropped"))
    await asyncio.sleep(0)  # both are queued; the batch has not started
    second.cancel()

    assert await first is not None
    with pytest.raises(asyncio.CancelledError):
        await second
    record = await store.fetch(dropped.pending_id)
    assert record is not None
    assert record.status is PENDING


async def test_a_write_cancelled_on_its_thread_hands_the_connection_on_once_it_returns(
    db_path: Path,
) -> None:
    """The caller is cancelled while its transaction runs on the worker thread: the
    connection goes to the next write only once the thread is done with it."""
    link = Link(str(db_path), busy_timeout=PATIENCE, on_open=lambda counter: None)
    started, release = threading.Event(), threading.Event()

    def slow(db: sqlite3.Connection, now: float) -> None:
        started.set()
        release.wait(PATIENCE)
        db.execute("CREATE TABLE made_on_the_thread (n INTEGER)")

    def count(db: sqlite3.Connection, now: float) -> list[Any]:
        return query(db, "SELECT count(*) FROM made_on_the_thread")

    cut = asyncio.create_task(link.transaction(slow, clock=time.time))
    await asyncio.to_thread(started.wait, PATIENCE)
    cut.cancel()
    following = asyncio.create_task(link.transaction(count, clock=time.time))
    release.set()

    with pytest.raises(asyncio.CancelledError):
        await cut
    # The thread committed its table before the next write had the connection.
    assert await following == [(0,)]
    await link.close()


async def test_a_read_cancelled_as_it_begins_leaves_nothing_running_on_the_connection(
    store: SQLiteStore,
) -> None:
    """The trail's read is cancelled with its BEGIN queued on aiosqlite's thread: the
    connection goes to the next write only once that BEGIN and the COMMIT behind it ran, so
    every later write starts its own transaction and commits it."""
    requests = [(await store.insert(make_request()))[0] for _ in range(3)]
    reading = asyncio.create_task(store.history_texts())
    await asyncio.sleep(0)  # the read's BEGIN is queued on the connection's thread
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading

    with logged(LOGGER, "may or may not have landed", level=logging.INFO) as in_doubt:
        for request in requests:
            assert await store.settle(request.pending_id, RESOLVED, result="kept") is not None
    assert not in_doubt.is_set()
    records = [await store.fetch(request.pending_id) for request in requests]
    assert [record.status for record in records if record is not None] == [RESOLVED] * 3


async def test_close_lets_queued_writes_finish(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    request, _ = await store.insert(make_request())
    settling = asyncio.create_task(store.settle(request.pending_id, RESOLVED, result="last"))
    await asyncio.sleep(0)  # the settle is queued

    await store.close()

    assert await settling is not None
    async with SQLiteStore(db_path) as reopened:
        record = await reopened.fetch(request.pending_id)
    assert record is not None
    assert record.result == "last"


async def test_inserts_purge_expired_outcomes_at_most_once_a_minute(
    db_path: Path, clock: FakeClock
) -> None:
    async with SQLiteStore(db_path, clock=clock, retention_seconds=10) as store:
        old, _ = await store.insert(make_request())
        await store.settle(old.pending_id, RESOLVED, result="x")
        clock.advance(30)
        await store.insert(make_request())
        assert old.pending_id in sqlite_stored_ids(db_path)

        clock.advance(31)
        await store.insert(make_request())
        assert old.pending_id not in sqlite_stored_ids(db_path)


# -- the change feed -------------------------------------------------------------------------


async def test_a_change_between_subscribing_and_connecting_is_not_lost(db_path: Path) -> None:
    async with SQLiteStore(db_path):
        pass  # the schema exists; the listener's store below has not connected yet
    listener_side = SQLiteStore(db_path)
    changes = Changes()
    listener_side.subscribe(changes)

    async def answer_elsewhere() -> str:
        async with SQLiteStore(db_path) as other:
            request, _ = await other.insert(make_request())
            await other.settle(request.pending_id, RESOLVED, result="x")
            return request.pending_id

    # This loop stands still while another thread writes, so the listener's store can only
    # connect once the change has committed.
    with ThreadPoolExecutor(1) as elsewhere:
        pending_id = elsewhere.submit(asyncio.run, answer_elsewhere()).result()
    try:
        await changes.arrival(PendingChange(SETTLED, pending_id))
    finally:
        await listener_side.close()


# -- faults ----------------------------------------------------------------------------------


async def test_an_unopenable_path_is_unavailable_until_it_is_fixed(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where a directory should be")
    store = SQLiteStore(blocker / "pending.db")
    try:
        with pytest.raises(StoreUnavailableError, match="not-a-directory") as caught:
            await store.insert(make_request())
        assert "writable" in str(caught.value)

        blocker.unlink()
        blocker.mkdir()
        request, created = await store.insert(make_request())
        assert created
        assert await store.fetch(request.pending_id) is not None
    finally:
        await store.close()


async def test_a_lock_held_past_the_busy_timeout_is_unavailable_then_clears(
    db_path: Path,
) -> None:
    async with SQLiteStore(db_path, busy_timeout=0.05) as store:
        request, _ = await store.insert(make_request())
        with closing(sqlite3.connect(db_path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreUnavailableError, match="busy_timeout"):
                await store.settle(request.pending_id, RESOLVED, result="blocked")
            # Writes that queued together fail together: none of them was written.
            outcomes = await asyncio.gather(
                store.settle(request.pending_id, REJECTED, reason="blocked"),
                store.insert(make_request()),
                return_exceptions=True,
            )
            assert all(isinstance(outcome, StoreUnavailableError) for outcome in outcomes)
            # Readers are not blocked by a writer.
            record = await store.fetch(request.pending_id)
            assert record is not None
            assert record.status is PENDING
            other.execute("COMMIT")

        assert await store.settle(request.pending_id, RESOLVED, result="through") is not None


async def test_the_feed_resyncs_after_the_store_comes_back(tmp_path: Path) -> None:
    missing = tmp_path / "later"
    store = SQLiteStore(missing / "pending.db")
    try:
        with logged(LOGGER, "failing") as failed:
            changes = Changes()
            store.subscribe(changes)
            async with asyncio.timeout(PATIENCE):
                await failed.wait()
        missing.mkdir()
        await changes.arrival(RESYNC)
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("make", "error", "name"),
    [
        (lambda p: SQLiteStore(b"pending.db"), TypeError, "path"),  # type: ignore[arg-type]
        (lambda p: SQLiteStore(42), TypeError, "path"),  # type: ignore[arg-type]
        (lambda p: SQLiteStore(p, busy_timeout=-1), ValueError, "busy_timeout"),
        (lambda p: SQLiteStore(p, settle_retry=-1), ValueError, "settle_retry"),
        (lambda p: SQLiteStore(p, settle_retry="5"), TypeError, "settle_retry"),  # type: ignore[arg-type]
        (lambda p: SQLiteStore(p, synchronous="off"), ValueError, "synchronous"),
        (lambda p: SQLiteStore(p, synchronous=1), TypeError, "synchronous"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_argument_is_refused_by_name(
    db_path: Path,
    make: Callable[[Path], SQLiteStore],
    error: type[Exception],
    name: str,
) -> None:
    with pytest.raises(error, match=name):
        make(db_path)


async def test_stores_opening_a_new_file_at_once_all_open(tmp_path: Path) -> None:
    """Switching a new file to WAL is not covered by the busy timeout: openers retry."""
    for trial in range(10):
        path = tmp_path / f"fresh-{trial}.db"
        stores = [SQLiteStore(path) for _ in range(4)]
        try:
            await asyncio.gather(*(store.open() for store in stores))
            listed = await asyncio.gather(*(store.list_pending() for store in stores))
        finally:
            await asyncio.gather(*(store.close() for store in stores))
        assert listed == [[], [], [], []]


async def test_a_constraint_other_than_the_id_is_said_and_fails_its_insert_alone(
    store: SQLiteStore, db_path: Path
) -> None:
    """A refusal by a constraint the file holds (here a trigger's, as a CHECK or a NOT NULL
    added to the table would) names what failed, not a stored id; the inserts beside it
    land, and a stored id is still told apart."""
    with closing(sqlite3.connect(db_path)) as db:
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_pending "
            "WHEN NEW.tool_name = 'wipe_disk' BEGIN SELECT RAISE(ABORT, 'no wipe_disk here'); END"
        )
        db.commit()
    before, refused, after = (
        make_request(),
        make_request(tool_name="wipe_disk"),
        make_request(),
    )

    outcomes = await asyncio.gather(
        store.insert(before), store.insert(refused), store.insert(after), return_exceptions=True
    )

    error = outcomes[1]
    assert isinstance(error, StoreError)
    assert str(error) == (
        f"pending request {refused.pending_id!r} could not be stored, the database refused "
        "it: no wipe_disk here; nothing was written"
    )
    assert await store.fetch(refused.pending_id) is None
    for request in (before, after):
        assert (await store.fetch(request.pending_id)) is not None
    with pytest.raises(StoreError) as again:
        await store.insert(make_request(pending_id=before.pending_id))
    assert str(again.value) == f"pending request {before.pending_id!r} is already stored"

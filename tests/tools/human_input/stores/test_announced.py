"""Every durable store records whether a request's announcement ran, so that a request stored
by a process that stopped before its ON_USER_INPUT_REQUIRED hook ran is announced later.

A new request owes its announcement until ``mark_announced``; an id not stored owes nothing.
The SQLite store also reads files made before it recorded announcements."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from tests.tools.human_input.stores.store_kit import (
    RESOLVED,
    Backend,
    Store,
    make_request,
    sqlite_insert_raw,
)

from roomkit.stores.sqlite import SQLiteStore
from roomkit.stores.sqlite import _schema as _sqlite_schema


async def test_a_new_request_owes_its_announcement_until_it_is_marked(
    backend: Backend, store: Store
) -> None:
    record, created = await store.insert(make_request())
    assert created
    assert await store.was_announced(record.pending_id) is False

    await store.mark_announced(record.pending_id)

    assert await store.was_announced(record.pending_id) is True
    # Every store sharing the file or server reads the same.
    async with backend.make() as other:
        assert await other.was_announced(record.pending_id) is True


async def test_a_settled_request_owes_no_announcement(store: Store) -> None:
    """Settled before its announcement ran, a request is owed none: marking it after writes
    nothing (on SQLite, no sync of the file)."""
    record, _ = await store.insert(make_request())
    await store.settle(record.pending_id, RESOLVED, result="blue", settled_by="ann")

    assert await store.was_announced(record.pending_id) is True


async def test_a_request_reattached_by_key_still_owes_its_announcement(store: Store) -> None:
    first, _ = await store.insert(make_request(key="room-1:ai-1:call-1"))

    again, created = await store.insert(make_request(key="room-1:ai-1:call-1"))

    assert not created
    assert again.pending_id == first.pending_id
    assert await store.was_announced(first.pending_id) is False


async def test_marking_an_unknown_request_stores_nothing(store: Store) -> None:
    await store.mark_announced("never-stored")

    assert await store.fetch("never-stored") is None
    assert await store.was_announced("never-stored") is True


async def test_marking_leaves_the_record_and_its_outcome_as_they_are(store: Store) -> None:
    record, _ = await store.insert(make_request(key="k1"))
    await store.settle(record.pending_id, RESOLVED, result="blue", settled_by="ann")

    await store.mark_announced(record.pending_id)

    settled = await store.fetch(record.pending_id)
    assert settled is not None
    assert (settled.status, settled.result, settled.settled_by) == (RESOLVED, "blue", "ann")


async def test_a_file_made_before_announcements_were_recorded_opens_and_reads_as_announced(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"
    old_schema = _sqlite_schema.SCHEMA.replace(",\n    unannounced INTEGER", "")
    assert old_schema != _sqlite_schema.SCHEMA
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.executescript(old_schema)
    sqlite_insert_raw(path)  # a request the earlier version stored, and announced

    async with SQLiteStore(path) as store, SQLiteStore(path) as other:
        assert await store.was_announced("alien") is True
        new, _ = await store.insert(make_request())
        assert await other.was_announced(new.pending_id) is False
        [listed, _] = await other.list_pending()
        assert listed.pending_id == "alien"

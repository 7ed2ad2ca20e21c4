"""The SQLite store's indexes: each write touches the few pages its readers need, and a file
made with the earlier indexes is brought up to date when it is opened.

A create and a settle each commit once with ``synchronous=FULL``, and the commit waits for
every page it wrote to reach the disk: the indexes of settled rows hold settled rows only,
the index of open rows open ones only, and the history and the chains' heads are tables
keyed by their primary key alone, so that neither write adds pages its readers never use;
the chains' index by age is made only where old histories are purged, their index of
unchecked heads only where checkpoints are taken.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from tests.tools.human_input.stores.store_kit import RESOLVED, make_request
from tests.tools.human_input.stores.trail_places import KEY, KEYS

from roomkit.stores import check_trail, settled_entry
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

EARLIER_INDEXES = {
    "roomkit_pending_by_status": "roomkit_pending (status, seq)",
    "roomkit_pending_by_settled_at": "roomkit_pending (settled_at)",
    "roomkit_pending_by_actor_settled": "roomkit_pending (actor_id, settled_at)",
}
INDEXES = {"roomkit_pending_open", "roomkit_pending_settled", "roomkit_pending_settled_by_actor"}


def log_frames(path: Path) -> int:
    """Pages in the file's write-ahead log; the log is emptied for the next count."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        (_, frames, _) = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return int(frames)


def index_names(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    return {name for (name,) in rows}


def make_earlier_file(path: Path) -> None:
    """Turn the store's file into one as earlier versions made it: the pending table's
    indexes over every row, and the history and chains as tables with a rowid."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        for name in INDEXES:
            db.execute(f"DROP INDEX {name}")
        for name, on in EARLIER_INDEXES.items():
            db.execute(f"CREATE INDEX {name} ON {on}")
        for table, columns in (
            (
                "roomkit_history",
                "pending_id TEXT NOT NULL, seq INTEGER NOT NULL, "
                "entry TEXT NOT NULL, PRIMARY KEY (pending_id, seq)",
            ),
            (
                "roomkit_chains",
                "pending_id TEXT PRIMARY KEY NOT NULL, last_at REAL NOT NULL, "
                "length INTEGER, head TEXT, epoch INTEGER, mac TEXT, checked INTEGER",
            ),
        ):
            db.execute(f"ALTER TABLE {table} RENAME TO earlier")
            db.execute(f"CREATE TABLE {table} ({columns})")
            db.execute(f"INSERT INTO {table} SELECT * FROM earlier")
            db.execute("DROP TABLE earlier")
        (rowid,) = db.execute("SELECT count(rowid) FROM roomkit_history").fetchone()
        assert rowid > 0  # the history is a rowid table again


async def test_a_create_and_a_settle_each_write_eight_pages_at_most(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    async with SQLiteStore(path) as store:
        for n in range(3):  # the first pages of each tree are made
            request, _ = await store.insert(make_request(actor_id="alice", key=f"k{n}"))
            await store.settle(
                request.pending_id, RESOLVED, result="x", history=[settled_entry("resolved")]
            )
        log_frames(path)

        request, _ = await store.insert(
            make_request(actor_id="alice", key="key"), history=[settled_entry("resolved")]
        )
        created = log_frames(path)
        await store.settle(
            request.pending_id, RESOLVED, result="x", history=[settled_entry("resolved")]
        )
        settled = log_frames(path)

    # The row, its id, key and change counter, the open rows' index, the counter itself,
    # the history and the chain's head; the settle writes the indexes of settled rows
    # instead of the id and the key.
    assert created <= 8
    assert settled <= 8


async def test_a_file_with_the_earlier_indexes_is_brought_up_to_date(tmp_path: Path) -> None:
    path = tmp_path / "earlier.db"
    async with SQLiteStore(path) as store:
        open_one, _ = await store.insert(
            make_request(actor_id="alice"), history=[settled_entry("resolved")]
        )
        closed, _ = await store.insert(make_request(actor_id="bob"))
        await store.settle(
            closed.pending_id, RESOLVED, result="no", history=[settled_entry("resolved")]
        )
    make_earlier_file(path)
    assert set(EARLIER_INDEXES) <= index_names(path)

    async with SQLiteStore(path) as store:
        pending = await store.list_pending()
        settled = await store.list_settled(actor_ids=["bob", None])
        won = await store.settle(
            open_one.pending_id, RESOLVED, result="yes", history=[settled_entry("resolved")]
        )
        history = await store.read_history(open_one.pending_id)
        fresh, _ = await store.insert(make_request(actor_id="carol"))
        after = await store.list_pending()

    names = index_names(path)
    assert names >= INDEXES
    assert not set(EARLIER_INDEXES) & names
    assert [record.pending_id for record in pending] == [open_one.pending_id]
    assert [record.pending_id for record in settled] == [closed.pending_id]
    assert won is not None
    assert [entry["type"] for entry in history] == ["settled", "settled"]
    assert [record.pending_id for record in after] == [fresh.pending_id]


async def test_the_chains_index_by_age_comes_with_the_first_purge_of_histories(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"
    async with SQLiteStore(path) as store:
        await store.insert(make_request(), history=[settled_entry("resolved")])
    assert "roomkit_chains_by_age" not in index_names(path)

    async with SQLiteStore(path, audit_retention=86_400) as store:
        await store.purge_expired()
    assert "roomkit_chains_by_age" in index_names(path)


async def test_the_index_of_unchecked_heads_comes_with_the_first_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_AUDIT_KEY", KEY)
    path = tmp_path / "pending.db"
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        asked = await handler.create("Ask", {"question": "?"})
        assert "roomkit_chains_unchecked" not in index_names(path)
        first = await store.trail.checkpoint()
        assert await handler.aresolve(asked.pending_id, "yes", by="bob")
        second = await store.trail.checkpoint()
        trail = await store.trail.read()

    assert "roomkit_chains_unchecked" in index_names(path)
    assert (first.heads, second.heads) == (1, 1)
    assert check_trail(trail, KEYS, now=time.time()).problems == []

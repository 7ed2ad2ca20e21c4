"""The notification outbox is a facet of its store, as the spend-once ledger is."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from roomkit.stores.outbox import KeepsOutbox, MemoryOutbox, OutboxItem, outbox_for
from roomkit.tools.human_input import HumanInputHandler


async def test_handlers_on_one_sqlite_store_share_its_outbox(tmp_path: Path) -> None:
    from roomkit.stores.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "outbox.db")
    try:
        first, second = HumanInputHandler(store=store), HumanInputHandler(store=store)
        assert isinstance(store, KeepsOutbox)
        assert first.outbox is second.outbox is store.outbox
        assert outbox_for(first) is store.outbox
        item = OutboxItem("p1.remind0", "p1", 1.0, {"job": "remind"}, created=0.0)
        assert await first.outbox.add([item]) == 1
        assert [found.item_id for found in await second.outbox.items_for("p1")] == ["p1.remind0"]
    finally:
        await store.close()


def test_the_postgres_outbox_is_the_one_the_store_purges() -> None:
    """The notifier's outbox keeps the retention the store was given (one object, not two)."""
    from roomkit.stores.postgres import PostgresStore

    store = PostgresStore("postgresql://u:p@127.0.0.1:1/db", outbox_retention_seconds=60.0)
    handler = HumanInputHandler(store=store)
    assert handler.outbox is store.outbox
    assert store.outbox.keep == 60.0


def test_a_redis_store_keeps_one_outbox() -> None:
    from roomkit.stores.redis import RedisStore

    store = RedisStore("redis://127.0.0.1:1/0")
    assert HumanInputHandler(store=store).outbox is store.outbox
    assert HumanInputHandler(store=store).outbox is store.outbox


def test_a_memory_handler_keeps_its_outbox_in_this_process() -> None:
    handler = HumanInputHandler()
    assert isinstance(handler.outbox, MemoryOutbox)
    assert outbox_for(handler) is handler.outbox
    assert HumanInputHandler().outbox is not handler.outbox


async def test_a_cancelled_outbox_write_hands_the_connection_on_once_its_thread_is_done(
    tmp_path: Path,
) -> None:
    """Cancelled while its thread waits for another connection's lock, a write lands whole or
    not at all; the write after it runs only once the thread is done, in a transaction of its
    own, and leaves no transaction open on the store's connection."""
    from roomkit.stores.sqlite import SQLiteStore

    path = tmp_path / "outbox.db"
    store = SQLiteStore(path)
    outbox = store.outbox
    try:
        assert await outbox.add([OutboxItem("p1.first", "p1", 1.0, {}, created=0.0)]) == 1
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        cut = asyncio.create_task(outbox.add([OutboxItem("p1.cut", "p1", 2.0, {}, created=1.0)]))
        await asyncio.sleep(0)  # its thread is started, and waits for the holder's lock
        cut.cancel()
        following = asyncio.create_task(
            outbox.add([OutboxItem("p1.following", "p1", 3.0, {}, created=2.0)])
        )
        await asyncio.sleep(0)
        holder.execute("ROLLBACK")
        holder.close()
        with pytest.raises(asyncio.CancelledError):
            await cut
        assert await following == 1
        found = [item.item_id for item in await outbox.items_for("p1")]
        assert found in (["p1.first", "p1.following"], ["p1.first", "p1.cut", "p1.following"])
        # No transaction is left open: another connection takes the write lock at once.
        with closing(sqlite3.connect(path, isolation_level=None, timeout=0)) as other:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
    finally:
        await store.close()


async def test_outboxes_opening_a_new_file_at_once_all_write(tmp_path: Path) -> None:
    """Switching a new file to WAL is not covered by the busy timeout: the stores whose
    outboxes write first retry it."""
    from roomkit.stores.sqlite import SQLiteStore

    for trial in range(50):
        stores = [SQLiteStore(tmp_path / f"fresh-{trial}.db") for _ in range(4)]
        try:
            added = await asyncio.gather(
                *(
                    store.outbox.add([OutboxItem(f"p{n}.remind0", f"p{n}", 1.0, {}, created=0.0)])
                    for n, store in enumerate(stores)
                )
            )
        finally:
            await asyncio.gather(*(store.close() for store in stores))
        assert added == [1, 1, 1, 1]

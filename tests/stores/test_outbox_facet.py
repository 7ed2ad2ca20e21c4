"""The notification outbox is a facet of its store, as the spend-once ledger is."""

from __future__ import annotations

from pathlib import Path

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

"""A SQLite store's outbox is a part of the store: it runs on the store's one connection, so
the two take turns instead of contending for the file's write lock (the outbox used to keep
a connection of its own, whose transactions a store with ``busy_timeout=0`` failed on)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from tests.tools.human_input.stores.store_kit import PATIENCE

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.outbox import OutboxItem
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

_BULK = 5_000
"""Items an outbox call adds or claims at a time: enough for its transaction to last while
the store's writes come."""


def _items(pending_id: str, count: int) -> list[OutboxItem]:
    return [
        OutboxItem(f"{pending_id}.remind{n}", pending_id, 0.0, {"job": "remind"}, created=0.0)
        for n in range(count)
    ]


async def test_the_outbox_and_the_store_used_at_once_take_turns(tmp_path: Path) -> None:
    """With ``busy_timeout=0``, outbox adds and claims of many items at a time, gathered with
    creates and settles, all succeed: neither meets the file locked by the other."""
    async with SQLiteStore(tmp_path / "turns.db", busy_timeout=0) as store:
        handler = HumanInputHandler(store=store)
        outbox = store.outbox

        async def outbox_turns(name: str) -> tuple[int, list[str]]:
            added = await outbox.add(_items(name, _BULK))
            claimed = await outbox.claim(name, 1.0, 30.0, _BULK)
            return added, [item.item_id for item in claimed]

        async def store_turns(n: int) -> bool:
            request = await handler.create("ask", {"question": f"#{n}?"}, actor_id="alice")
            return await handler.aresolve(request.pending_id, "yes", by="alice")

        for round_ in range(3):
            async with asyncio.timeout(PATIENCE):
                outboxed, settled = await asyncio.gather(
                    asyncio.gather(*(outbox_turns(f"r{round_}-{n}") for n in range(2))),
                    asyncio.gather(*(store_turns(n) for n in range(20))),
                )
            assert all(settled)
            # Each claim finds at least its own items due, and takes no item twice.
            assert [added for added, _ in outboxed] == [_BULK, _BULK]
            claimed = [item_id for _, ids in outboxed for item_id in ids]
            assert len(claimed) == len(set(claimed)) == 2 * _BULK
        assert await outbox.next_due() == 31.0  # every item is claimed, until the leases end
        await handler.close()


async def test_an_outbox_write_to_a_deleted_file_is_refused(tmp_path: Path) -> None:
    """The outbox's writes pass the store's look for moved files: one that would land in a
    deleted file, which nobody would read again, is refused instead of acknowledged."""
    path = tmp_path / "moved.db"
    async with SQLiteStore(path) as store:
        assert await store.outbox.add(_items("before", 1)) == 1
        os.remove(path)
        with pytest.raises(StoreUnavailableError, match="deleted or replaced"):
            await store.outbox.add(_items("after", 1))


async def test_rows_the_outbox_table_refuses_fail_the_outbox_call_alone(tmp_path: Path) -> None:
    """A trigger refuses every row added to the outbox: the add fails as the store being
    unavailable and writes nothing, and the store's writes made with it (in its transaction,
    or the next) still land."""
    path = tmp_path / "refused.db"
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        assert await store.outbox.add(_items("before", 1)) == 1
        with closing(sqlite3.connect(path, timeout=PATIENCE)) as db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_outbox "
                "BEGIN SELECT RAISE(ABORT, 'the outbox is blocked'); END"
            )

        async def create(n: int) -> str:
            request = await handler.create("ask", {"question": f"#{n}?"}, actor_id="alice")
            return request.pending_id

        made = await asyncio.gather(
            create(0), store.outbox.add(_items("refused", 2)), create(1), return_exceptions=True
        )
        assert isinstance(made[1], StoreUnavailableError)
        assert "the outbox is blocked" in str(made[1])
        assert await store.outbox.items_for("refused") == []
        stored = await store.fetch_many([made[0], made[2]])
        assert {record.pending_id for record in stored} == {made[0], made[2]}
        await handler.close()


async def test_the_outboxs_own_changes_wait_for_no_disk(tmp_path: Path) -> None:
    """On a store at ``synchronous=FULL``, the outbox's adds, claims and completions commit
    at ``NORMAL`` (a delivery takes several, one after the other), and the store's writes
    between them at ``FULL`` still. Triggers note the level each row was written at."""
    path = tmp_path / "levels.db"
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        outbox = store.outbox
        assert await outbox.add(_items("first", 1)) == 1
        with closing(sqlite3.connect(path, timeout=PATIENCE)) as db:
            db.execute("CREATE TABLE levels (n INTEGER PRIMARY KEY, what TEXT, level INTEGER)")
            for table, event in (
                ("roomkit_outbox", "INSERT"),
                ("roomkit_outbox", "UPDATE"),
                ("roomkit_pending", "INSERT"),
            ):
                db.execute(
                    f"CREATE TRIGGER note_{table}_{event} AFTER {event} ON {table} BEGIN "
                    f"INSERT INTO levels (what, level) "
                    f"SELECT '{table} {event}', synchronous FROM pragma_synchronous; END"
                )

        await outbox.add(_items("second", 1))
        await handler.create("ask", {"question": "?"}, actor_id="alice")
        (claimed,) = await outbox.claim("owner", 1.0, 30.0, 1)
        await outbox.complete(claimed.item_id, {"sent": True})
        await handler.close()

    normal, full = 1, 2
    with closing(sqlite3.connect(path, timeout=PATIENCE)) as db:
        levels = db.execute("SELECT what, level FROM levels ORDER BY n").fetchall()
    assert levels == [
        ("roomkit_outbox INSERT", normal),
        ("roomkit_pending INSERT", full),
        ("roomkit_outbox UPDATE", normal),
        ("roomkit_outbox UPDATE", normal),
    ]

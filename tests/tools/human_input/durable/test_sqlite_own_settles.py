"""What the SQLite store's own settles tell: their listeners get the settled record with
the change (a waiter reads none), and a request it settled owes no announcement, so marking
it writes nothing."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

QUESTION = {"question": "Ship it?"}


async def test_a_settle_on_sqlite_tells_its_listeners_the_record(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "pending.db") as store:
        heard: list[PendingChange] = []
        store.subscribe(heard.append)
        handler = HumanInputHandler(store=store)
        request = await handler.create("AskUserQuestion", QUESTION)

        assert await handler.aresolve(request.pending_id, "blue", by="ann")

        [settled] = [change for change in heard if change.kind is PendingChangeKind.SETTLED]
        assert settled.record is not None
        assert settled.record.pending_id == request.pending_id
        assert (settled.record.status, settled.record.result, settled.record.settled_by) == (
            PendingInputStatus.RESOLVED,
            "blue",
            "ann",
        )
        await handler.close()


async def test_marking_a_request_this_sqlite_store_settled_as_announced_writes_nothing(
    tmp_path: Path,
) -> None:
    """Its settle cleared the owed announcement: the mark needs no write, so another
    connection holding the file's write lock does not hold it up."""
    path = tmp_path / "pending.db"
    async with SQLiteStore(path, busy_timeout=0.0) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("AskUserQuestion", QUESTION)
        assert await handler.aresolve(request.pending_id, "blue")

        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            await store.mark_announced(request.pending_id)
            other.execute("ROLLBACK")

        assert await store.was_announced(request.pending_id) is True
        await handler.close()

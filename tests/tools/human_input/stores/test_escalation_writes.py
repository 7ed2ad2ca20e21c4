"""An escalation is one write: its approvers and the ``escalated`` entry naming who added
them land together or not at all, on every durable store.

A database that refuses the entry (a trigger here) or a Redis server stopped just before it
leaves the request's approvers as they were: nobody may decide the request on the strength
of an escalation its history does not show.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from tests.servers.postgres_server import PostgresServer
from tests.tools.human_input.stores.redis_relay import Relay
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit import HumanInputHandler
from roomkit.core.exceptions import StoreError
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve

pytestmark = pytest.mark.timeout(60)

APPROVERS = ["ann", "bob", "cat"]


async def held_until_escalated(handler: HumanInputHandler) -> str:
    """An approval of ann, bob and cat that ann has voted on: the request's id."""
    held = await handler.create_approval("pay", {"a": 1}, approvers=APPROVERS, quorum=2)
    assert await handler.aresolve(held.pending_id, approve(), by="ann")
    return held.pending_id


async def unchanged(handler: HumanInputHandler, pending_id: str) -> None:
    """The request is as before the escalation: dan may not vote, the history never says."""
    record = await handler.get_request(pending_id)
    assert record is not None
    assert "dan" not in record.approvers
    assert [entry["type"] for entry in await handler.history(pending_id)] == ["created", "voted"]
    assert not await handler.aresolve(pending_id, approve(), by="dan")


async def test_an_escalation_whose_entry_sqlite_refuses_adds_nobody(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        pending_id = await held_until_escalated(handler)
        with closing(sqlite3.connect(path)) as db, db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
                "WHEN NEW.entry LIKE '%escalated%' BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        with pytest.raises((StoreError, sqlite3.Error)):
            await handler.add_approvers(pending_id, ["dan"], by="ops")
        await unchanged(handler, pending_id)


async def test_an_escalation_whose_entry_postgres_refuses_adds_nobody(
    postgres_server: PostgresServer, prefix: str
) -> None:
    async with PostgresStore(postgres_server.dsn, schema=prefix) as store:
        handler = HumanInputHandler(store=store)
        pending_id = await held_until_escalated(handler)
        async with await psycopg.AsyncConnection.connect(postgres_server.dsn) as db:
            await db.execute(
                f"CREATE FUNCTION {prefix}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN IF NEW.entry LIKE '%escalated%' THEN RAISE EXCEPTION 'refused'; END IF; "
                "RETURN NEW; END $$"
            )
            await db.execute(
                f"CREATE TRIGGER refuse BEFORE INSERT ON {prefix}.roomkit_history "
                f"FOR EACH ROW EXECUTE FUNCTION {prefix}.refuse()"
            )
            await db.commit()
        with pytest.raises((StoreError, psycopg.Error)):
            await handler.add_approvers(pending_id, ["dan"], by="ops")
        await unchanged(handler, pending_id)


async def test_an_escalation_cut_before_its_entry_reaches_redis_adds_nobody(
    server: RedisServer, relay: Relay, prefix: str
) -> None:
    store = RedisStore(relay.url, prefix=prefix, timeout=0.5, settle_retry=0.5)
    try:
        handler = HumanInputHandler(store=store)
        pending_id = await held_until_escalated(handler)
        relay.call_before(b"ops-on-call", server.stop)
        with pytest.raises(StoreError):
            await handler.add_approvers(pending_id, ["dan"], by="ops-on-call")
        await asyncio.to_thread(server.start)
        await unchanged(handler, pending_id)
    finally:
        await store.close()

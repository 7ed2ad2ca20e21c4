"""``roomkit audit checkpoint --adopt`` run by two processes at once on one PostgreSQL
schema: each head is signed once, the trail holds, and each says only what it signed."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.postgres_kit import new_schema
from tests.tools.human_input.stores.trail_places import KEY, answered_by_bob

from roomkit.stores import AuditKeys, check_trail
from roomkit.stores.postgres import PostgresStore


async def both_wait_on_a_lock(dsn: str, schema: str) -> None:
    """Return once two sessions wait on a lock while signing a head of ``schema``."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
        while True:
            cursor = await db.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE %s",
                (f'INSERT INTO "{schema}".roomkit_chains %',),
            )
            row = await cursor.fetchone()
            if row is not None and row[0] >= 2:
                return
            await db.execute("SELECT pg_sleep(0.01)")


async def test_two_adoptions_at_once_sign_each_head_once(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both read the same unsigned chains before either signs (a third session holds the
    first chain's row): the one that signs second finds the heads signed and counts none;
    it counted them all as its own."""
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    dsn, schema = postgres_server.dsn, new_schema()
    async with PostgresStore(dsn, schema=schema) as store:  # a process without the key
        first = min(await answered_by_bob(store))
    keys = AuditKeys([KEY])
    async with (
        PostgresStore(dsn, schema=schema) as one,
        PostgresStore(dsn, schema=schema) as other,
        await psycopg.AsyncConnection.connect(dsn) as holder,
    ):
        for store in (one, other):
            store.trail.use_keys(keys)
        await holder.execute(
            f'SELECT 1 FROM "{schema}".roomkit_chains WHERE pending_id = %s FOR UPDATE',
            (first,),
        )
        adoptions = [asyncio.create_task(store.trail.adopt()) for store in (one, other)]
        async with asyncio.timeout(30):
            await both_wait_on_a_lock(dsn, schema)
            await holder.rollback()
            done = await asyncio.gather(*adoptions)
        assert sorted(signed for signed, _ in done) == [0, 2]
        assert [broken for _, broken in done] == [[], []]
        report = check_trail(await one.trail.read(), keys, now=0.0)
    assert report.problems == []

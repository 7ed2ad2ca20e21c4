"""``roomkit audit checkpoint --adopt`` run by two processes at once on one PostgreSQL
schema: each head is signed once, the trail holds, and each says only what it signed; a chain
appended to while an adoption runs is left to the next."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.postgres_kit import new_schema
from tests.tools.human_input.stores.trail_places import KEY, answered_by_bob

from roomkit.stores import AuditKeys, check_trail, new_entry
from roomkit.stores.postgres import PostgresStore


async def lock_waits(dsn: str, sessions: int, matching: str, value: str) -> None:
    """Return once ``sessions`` sessions wait on a lock whose activity meets ``matching``
    (a condition on ``pg_stat_activity`` taking ``value``)."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
        while True:
            cursor = await db.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                f"AND {matching}",
                (value,),
            )
            row = await cursor.fetchone()
            if row is not None and row[0] >= sessions:
                return
            await db.execute("SELECT pg_sleep(0.01)")


async def both_wait_on_a_lock(dsn: str, schema: str) -> None:
    """Return once two sessions wait on a lock while signing a head of ``schema``."""
    await lock_waits(dsn, 2, "query LIKE %s", f'INSERT INTO "{schema}".roomkit_chains %')


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


@asynccontextmanager
async def pausing_reader(dsn: str, schema: str) -> AsyncIterator[str]:
    """A role whose reads of ``schema``'s history wait, row by row, for the advisory lock
    named by ``schema`` (a row-level security policy, applied once the statement has its
    snapshot); its name."""
    role = f"r{uuid.uuid4().hex[:12]}"
    s = f'"{schema}"'
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
        await db.execute(
            f"CREATE FUNCTION {s}.paused() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$ "
            f"BEGIN PERFORM pg_advisory_lock_shared(hashtext('{schema}')); "
            f"PERFORM pg_advisory_unlock_shared(hashtext('{schema}')); RETURN true; END $$"
        )
        await db.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        await db.execute(f"GRANT ALL ON SCHEMA {s} TO {role}")
        await db.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {s} TO {role}")
        await db.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA {s} TO {role}")
        await db.execute(f"ALTER TABLE {s}.roomkit_history ENABLE ROW LEVEL SECURITY")
        await db.execute(
            f"CREATE POLICY pausing ON {s}.roomkit_history TO {role} "
            f"USING ({s}.paused()) WITH CHECK (true)"
        )
        try:
            yield role
        finally:
            await db.execute(f"DROP OWNED BY {role}")
            await db.execute(f"DROP ROLE {role}")


async def test_an_append_while_adopting_leaves_its_chain_unsigned(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append to a chain commits after the adoption read its entries, before it signs:
    the head read is no longer the chain's and is left unsigned, where it was signed for
    fewer entries than the chain held; a second adoption signs it."""
    monkeypatch.delenv("ROOMKIT_AUDIT_KEY", raising=False)
    dsn, schema = postgres_server.dsn, new_schema()
    keys = AuditKeys([KEY])
    async with PostgresStore(dsn, schema=schema) as keyless:  # a process without the key
        first = min(await answered_by_bob(keyless))
        async with (
            pausing_reader(dsn, schema) as reader,
            PostgresStore(make_conninfo(dsn, user=reader, password="pw"), schema=schema) as adopter,
            await psycopg.AsyncConnection.connect(dsn, autocommit=True) as holder,
        ):
            adopter.trail.use_keys(keys)
            await holder.execute("SELECT pg_advisory_lock(hashtext(%s))", (schema,))
            adoption = asyncio.create_task(adopter.trail.adopt())
            async with asyncio.timeout(30):
                await lock_waits(dsn, 1, "usename = %s", reader)
                await keyless.append_history(first, new_entry("shown", surface="desk"))
                await holder.execute("SELECT pg_advisory_unlock(hashtext(%s))", (schema,))
                assert await adoption == (1, [])
                assert await adopter.trail.adopt() == (1, [])
            report = check_trail(await adopter.trail.read(), keys, now=0.0)
    assert report.problems == []

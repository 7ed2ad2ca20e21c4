"""A PostgreSQL store whose ``open()`` fails after its pool started leaves nothing running: the
caller of ``async with store:`` gets no store to close, so the opening closes its pool (its
tasks and its connections) itself before it raises."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import psycopg
import pytest

from roomkit.core.exceptions import StoreError
from roomkit.stores.postgres import PostgresStore

LOOKS = 1000
"""How many times the server is asked whether the store's sessions have ended: each look is
a round trip, after which a session the store closed has long been gone."""


@pytest.fixture
async def no_clock(database: str) -> AsyncIterator[str]:
    """The DSN of a role that may create the store's tables in ``database``, but not read the
    server's clock (which the store reads on its pool once the tables are checked)."""
    role = f"app{os.urandom(4).hex()}"
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        await admin.execute(f"GRANT CREATE ON DATABASE {urlsplit(database).path[1:]} TO {role}")
        await admin.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
        await admin.execute("REVOKE EXECUTE ON FUNCTION clock_timestamp() FROM PUBLIC")
    address = urlsplit(database)
    yield f"postgresql://{role}:pw@{address.hostname}:{address.port}{address.path}"
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        await admin.execute(f"DROP OWNED BY {role}")
        await admin.execute(f"DROP ROLE {role}")


async def _sessions(database: str, name: str) -> int:
    """How many sessions named ``name`` the server still has, once those ending have ended."""
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        for _ in range(LOOKS):
            cursor = await admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            )
            row = await cursor.fetchone()
            assert row is not None
            if row[0] == 0:
                return 0
        return int(row[0])


async def test_a_failed_open_closes_the_pool_it_started(database: str, no_clock: str) -> None:
    name = f"roomkit-failed-open-{os.urandom(4).hex()}"
    store = PostgresStore(f"{no_clock}?application_name={name}")
    before = asyncio.all_tasks()
    try:
        with pytest.raises(StoreError, match="clock_timestamp"):
            async with store:
                pytest.fail("the store opened")
        assert {task.get_name() for task in asyncio.all_tasks() - before} == set()
        assert await _sessions(database, name) == 0
    finally:
        await store.close()

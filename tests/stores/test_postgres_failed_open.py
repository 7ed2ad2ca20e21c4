"""A PostgreSQL store whose ``open()`` fails after its pool started leaves nothing running: the
caller of ``async with store:`` gets no store to close, so the opening closes its pool (its
tasks and its connections) itself before it raises."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from tests.stores.postgres_roles import login_role, sessions

from roomkit.core.exceptions import StoreError
from roomkit.stores.postgres import PostgresStore


@pytest.fixture
async def no_clock(database: str) -> AsyncIterator[str]:
    """The DSN of a role that may create the store's tables in ``database``, but not read the
    server's clock (which the store reads on its pool once the tables are checked)."""
    async with login_role(
        database,
        f"GRANT CREATE ON DATABASE {urlsplit(database).path[1:]} TO {{role}}",
        "GRANT CREATE ON SCHEMA public TO {role}",
        "REVOKE EXECUTE ON FUNCTION clock_timestamp() FROM PUBLIC",
    ) as dsn:
        yield dsn


async def test_a_failed_open_closes_the_pool_it_started(database: str, no_clock: str) -> None:
    name = f"roomkit-failed-open-{os.urandom(4).hex()}"
    store = PostgresStore(f"{no_clock}?application_name={name}")
    before = asyncio.all_tasks()
    try:
        with pytest.raises(StoreError, match="clock_timestamp"):
            async with store:
                pytest.fail("the store opened")
        assert {task.get_name() for task in asyncio.all_tasks() - before} == set()
        assert await sessions(database, name) == 0
    finally:
        await store.close()

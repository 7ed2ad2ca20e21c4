"""A PostgreSQL user who may not make the stores' tables is told what to grant, in a plain
:class:`~roomkit.core.exceptions.StoreError` (no retry helps, so not an outage), never
psycopg's raw ``InsufficientPrivilege``; and once an owner made the tables, such a user
opens and uses the stores with the rights on them alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import psycopg
import pytest
from tests.stores.postgres_roles import login_role

from roomkit.core.exceptions import StoreError, StoreUnavailableError
from roomkit.models.room import Room
from roomkit.stores import close_stores, open_url
from roomkit.stores.postgres import PostgresRoomStore, PostgresStore


@pytest.fixture
async def limited(database: str) -> AsyncIterator[str]:
    """The DSN of a role that may log in to ``database``, and create nothing in it."""
    async with login_role(database, "REVOKE CREATE ON SCHEMA public FROM PUBLIC") as dsn:
        yield dsn


@pytest.mark.parametrize("kind", [PostgresStore, PostgresRoomStore])
async def test_a_user_who_may_not_create_the_tables_is_told_what_to_grant(
    kind: type[PostgresStore | PostgresRoomStore], limited: str
) -> None:
    store = kind(limited)
    try:
        with pytest.raises(StoreError, match="GRANT CREATE ON SCHEMA public TO") as raised:
            await store.open()
        assert not isinstance(raised.value, StoreUnavailableError), "no retry heals a grant"
        assert "as its owner" in str(raised.value)
    finally:
        await store.close()


async def test_tables_an_owner_made_open_for_a_user_who_may_not_create(
    database: str, limited: str
) -> None:
    await _made_by_owner(database)
    await _grant_use(database, urlsplit(limited).username or "")
    requests, rooms = open_url(limited)
    try:
        async with requests, rooms:
            assert await requests.list_pending() == []
            await rooms.create_room(Room("room-1"))
            assert await rooms.get_room("room-1") is not None
    finally:
        await close_stores(requests, rooms)


async def _made_by_owner(database: str) -> None:
    """The stores' tables, made by the database's owner."""
    requests, rooms = open_url(database)
    async with requests, rooms:
        pass


async def _grant_use(database: str, role: str) -> None:
    """What a user of tables made by their owner needs: their use, not their making."""
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        await admin.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        await admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        await admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")


async def test_a_user_who_may_only_read_is_told_what_to_grant_when_it_writes(
    database: str, limited: str
) -> None:
    await _made_by_owner(database)
    role = urlsplit(limited).username or ""
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        await admin.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        await admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        await admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    async with PostgresRoomStore(limited) as rooms:
        with pytest.raises(StoreError, match="grant it the use of the store's tables") as raised:
            await rooms.create_room(Room("room-1"))
        assert not isinstance(raised.value, StoreUnavailableError)


async def test_a_user_with_create_on_the_schema_alone_makes_the_tables(database: str) -> None:
    """No CREATE on the database is needed for a schema that is there."""
    async with login_role(database, "GRANT CREATE ON SCHEMA public TO {role}") as dsn:
        requests, rooms = open_url(dsn)
        try:
            async with requests, rooms:
                await rooms.create_room(Room("room-1"))
        finally:
            await close_stores(requests, rooms)

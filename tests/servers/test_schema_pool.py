"""A schema a test gives back reaches the next test holding no row, under a new name, or not
at all: when its test changed how it is made, or still holds a lock in it."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from tests.servers.postgres_server import PostgresServer
from tests.servers.schema_pool import SchemaPool
from tests.tools.human_input.stores.store_kit import make_request

from roomkit.models.room import Room
from roomkit.stores.grants import Grant
from roomkit.stores.postgres import PostgresRoomStore, PostgresStore


@pytest.fixture(scope="module")
def pool(postgres_server: PostgresServer) -> Iterator[SchemaPool]:
    """A pool of these tests' own, so that what they give back goes to none of the others."""
    with SchemaPool(postgres_server.dsn) as made:
        yield made


@pytest.fixture
async def used(postgres_server: PostgresServer, pool: SchemaPool) -> str:
    """A schema where a request store, its grants and a room store wrote, all closed."""
    schema = pool.take()
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        await store.insert(make_request(pending_id="p1"))
        await store.grants.add(
            Grant(grant_id="g1", tool="pay", granted_by=("ann",), expires_at=store.clock() + 60)
        )
    rooms = PostgresRoomStore(postgres_server.dsn, schema=schema)
    try:
        await rooms.open()
        await rooms.create_room(Room("r1"))
    finally:
        await rooms.close()
    return schema


def _tables(dsn: str, schema: str) -> list[str]:
    with psycopg.connect(dsn) as db:
        rows = db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", (schema,)
        ).fetchall()
    return [str(name) for (name,) in rows]


async def test_a_schema_given_back_is_taken_again_empty_under_a_new_name(
    postgres_server: PostgresServer, pool: SchemaPool, used: str
) -> None:
    dsn = postgres_server.dsn
    tables = _tables(dsn, used)
    pool.give_back(used)
    taken = pool.take()
    assert taken != used
    assert _tables(dsn, used) == []
    assert _tables(dsn, taken) == [name for name in tables if name != "roomkit_grants"]
    async with PostgresStore(dsn, schema=taken) as store:
        assert await store.fetch("p1") is None
        assert await store.grants.list() == []
    rooms = PostgresRoomStore(dsn, schema=taken)
    try:
        await rooms.open()
        assert await rooms.get_room("r1") is None
    finally:
        await rooms.close()
    with psycopg.connect(dsn) as db:
        sequence = f'"{taken}".roomkit_pending_seq'
        (seq,) = db.execute("SELECT nextval(%s)", (sequence,)).fetchone() or ()
        versions = db.execute(f'SELECT version FROM "{taken}".roomkit_schema').fetchall()
    assert seq == 1
    assert len(versions) > 1


async def test_a_store_left_open_reaches_nothing_of_the_next_test(
    postgres_server: PostgresServer, pool: SchemaPool, used: str
) -> None:
    """Its statements name the schema by the name it had, which no schema has now (those it
    prepared too)."""
    dsn = postgres_server.dsn
    async with PostgresStore(dsn, schema=used) as left:
        for _ in range(10):  # psycopg prepares a statement from its fifth run on
            await left.fetch("p2")
        pool.give_back(used)
        taken = pool.take()
        assert taken != used
        async with PostgresStore(dsn, schema=taken) as store:
            await store.insert(make_request(pending_id="p2"))
            with pytest.raises(psycopg.errors.UndefinedTable):
                await left.fetch("p2")


CHANGES = {
    "a function added": 'CREATE FUNCTION "{s}".f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$',
    "a trigger added": (
        'CREATE FUNCTION "{s}".f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; '
        'END $$; CREATE TRIGGER t BEFORE INSERT ON "{s}".roomkit_pending '
        'FOR EACH ROW EXECUTE FUNCTION "{s}".f()'
    ),
    "a version removed": 'DELETE FROM "{s}".roomkit_schema WHERE version = 2',
    "a version added": 'INSERT INTO "{s}".roomkit_schema VALUES (99)',
    "a column dropped": 'ALTER TABLE "{s}".roomkit_chains DROP COLUMN checked',
    "an index dropped": 'DROP INDEX "{s}".roomkit_pending_open',
    "a table of its own": 'CREATE TABLE "{s}".notes (body text)',
    "a table of a store dropped": 'DROP TABLE "{s}".roomkit_turn_steps',
    "a grant": 'GRANT SELECT ON "{s}".roomkit_pending TO pg_monitor',
}


@pytest.mark.parametrize("change", CHANGES)
async def test_a_schema_its_test_changed_is_not_taken_again(
    postgres_server: PostgresServer, pool: SchemaPool, used: str, change: str
) -> None:
    dsn = postgres_server.dsn
    with psycopg.connect(dsn) as db:
        db.execute(CHANGES[change].replace("{s}", used))
    tables = _tables(dsn, used)
    pool.give_back(used)
    assert pool.take() != used
    assert _tables(dsn, used) == tables


async def test_a_schema_where_a_connection_holds_a_lock_is_not_taken_again(
    postgres_server: PostgresServer, pool: SchemaPool, used: str
) -> None:
    with psycopg.connect(postgres_server.dsn) as db:
        db.execute(f'SELECT * FROM "{used}".roomkit_pending')
        pool.give_back(used)
        assert pool.take() != used
        (count,) = db.execute(f'SELECT count(*) FROM "{used}".roomkit_pending').fetchone() or ()
    assert count == 1

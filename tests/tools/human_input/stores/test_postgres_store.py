"""What only the Postgres store does: its DSN, its errors at open, its schema version, and
one listening connection per process."""

from __future__ import annotations

import asyncio
import logging
import random

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.postgres_kit import new_schema
from tests.tools.human_input.stores.store_kit import (
    CREATED,
    RESOLVED,
    RESYNC,
    Changes,
    ids,
    make_request,
    public_fields,
)

from roomkit import HumanInputHandler
from roomkit.core.exceptions import (
    InvalidTextError,
    StoreError,
    StoreFormatError,
    StoreUnavailableError,
)
from roomkit.stores import PendingChange
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.postgres._listen import LISTENER
from roomkit.tools.approvals import approve


async def sql(dsn: str, statement: str) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
        cursor = await db.execute(statement)
        return list(await cursor.fetchall()) if cursor.description else []


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
async def test_both_url_schemes_open(
    postgres_server: PostgresServer, postgres_schema: str, scheme: str
) -> None:
    dsn = postgres_server.dsn_for(scheme=scheme)
    async with PostgresStore(dsn, schema=postgres_schema) as store:
        record, created = await store.insert(make_request())
        assert created
        fetched = await store.fetch(record.pending_id)
        assert fetched is not None
        assert public_fields(fetched) == public_fields(record)


async def test_a_borrowed_pool_is_used_and_left_open(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    pool: AsyncConnectionPool[psycopg.AsyncConnection[object]] = AsyncConnectionPool(
        postgres_server.dsn, open=False, kwargs={"autocommit": True}
    )
    try:
        async with PostgresStore(pool, schema=postgres_schema) as store:
            record, _ = await store.insert(make_request())
            won = await store.settle(record.pending_id, RESOLVED, result="x")
            assert won is not None
        assert not pool.closed
    finally:
        await pool.close()


@pytest.mark.parametrize(
    ("dsn", "error"),
    [
        ("redis://127.0.0.1:6379/0", ValueError),
        ("/var/lib/pending.db", ValueError),
        (5432, TypeError),
    ],
)
def test_a_dsn_that_is_not_postgres_is_refused(dsn: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="postgresql://"):
        PostgresStore(dsn)  # type: ignore[arg-type]


def test_a_bad_schema_name_is_refused() -> None:
    with pytest.raises(ValueError, match="schema"):
        PostgresStore("postgresql://localhost/app", schema="Robert'); DROP TABLE")


async def test_a_wrong_password_is_a_store_error_at_open(
    postgres_server: PostgresServer,
) -> None:
    store = PostgresStore(postgres_server.dsn_for(password="wrong"), schema=new_schema())
    with pytest.raises(StoreError, match="password") as caught:
        await store.open()
    assert "wrong" not in str(caught.value)
    await store.close()


async def test_a_missing_database_is_a_store_error_at_open(
    postgres_server: PostgresServer,
) -> None:
    store = PostgresStore(postgres_server.dsn_for("nowhere"), schema=new_schema())
    with pytest.raises(StoreError, match="createdb"):
        async with store:
            pass


async def test_a_server_that_is_not_there_is_a_store_error_at_open(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.dsn.replace(str(postgres_server.port), "1")
    with pytest.raises(StoreError, match="that the server runs"):
        async with PostgresStore(dsn, schema=new_schema(), connect_timeout=5):
            pass


async def test_tables_of_a_newer_version_are_refused_at_open(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    schema = postgres_schema
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        await store.insert(make_request())
    await sql(postgres_server.dsn, f'INSERT INTO "{schema}".roomkit_schema VALUES (99)')

    with pytest.raises(StoreFormatError, match=r"version 99.*upgrade roomkit"):
        async with PostgresStore(postgres_server.dsn, schema=schema):
            pass
    rows = await sql(postgres_server.dsn, f'SELECT status FROM "{schema}".roomkit_pending')
    assert rows == [("pending",)]


async def test_stores_opening_a_new_schema_at_once_all_open(
    postgres_server: PostgresServer,
) -> None:
    schema = new_schema()
    stores = [PostgresStore(postgres_server.dsn, schema=schema) for _ in range(6)]
    try:
        await asyncio.gather(*(store.open() for store in stores))
        versions = await sql(postgres_server.dsn, f'SELECT version FROM "{schema}".roomkit_schema')
        assert versions == [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,), (9,), (10,)]
    finally:
        for store in stores:
            await store.close()


async def test_a_request_with_a_nul_is_refused_before_it_is_written(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    async with PostgresStore(postgres_server.dsn, schema=postgres_schema) as store:
        with pytest.raises(InvalidTextError, match="NUL"):
            await store.insert(make_request(pending_id="a\x00b"))
        record, _ = await store.insert(make_request())
        assert ids(await store.list_pending()) == [record.pending_id]


async def test_an_answer_that_starts_like_an_escaped_one_reads_back_as_given(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    async with PostgresStore(postgres_server.dsn, schema=postgres_schema) as store:
        record, _ = await store.insert(make_request())
        text = '\x01"not json'
        won = await store.settle(record.pending_id, RESOLVED, result=text, settled_by="\x01")
        assert won is not None
        assert (won.result, won.settled_by) == (text, "\x01")
        fetched = await store.fetch(record.pending_id)
        assert fetched is not None
        assert (fetched.result, fetched.settled_by) == (text, "\x01")


async def test_the_stores_of_a_process_share_one_listening_connection(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    schema, other = postgres_schema, new_schema()
    stores = [
        PostgresStore(postgres_server.dsn, schema=schema),
        PostgresStore(postgres_server.dsn, schema=schema),
        PostgresStore(postgres_server.dsn, schema=other),
    ]
    heard = [Changes() for _ in stores]
    try:
        for store, changes in zip(stores, heard, strict=True):
            store.subscribe(changes)
            await changes.arrival(RESYNC)
        rows = await sql(
            postgres_server.dsn,
            f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{LISTENER}'",
        )
        assert rows == [(1,)]

        request, _ = await stores[0].insert(make_request())
        created = PendingChange(CREATED, request.pending_id)
        # The second store hears the first one's create through the shared connection.
        await heard[1].arrival(created)
        assert created not in heard[2].seen
    finally:
        for store in stores:
            await store.close()
    rows = await sql(
        postgres_server.dsn,
        f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{LISTENER}'",
    )
    assert rows == [(0,)]


async def test_a_terminated_listening_connection_resyncs_its_listeners(
    postgres_server: PostgresServer, postgres_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    schema = postgres_schema
    async with (
        PostgresStore(postgres_server.dsn, schema=schema) as listening,
        PostgresStore(postgres_server.dsn, schema=schema) as writing,
    ):
        changes = Changes()
        listening.subscribe(changes)
        await changes.arrival(RESYNC)
        before = len(changes.seen)
        with caplog.at_level(logging.WARNING, logger="roomkit.tools.human_input.stores.postgres"):
            await sql(
                postgres_server.dsn,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE application_name = '{LISTENER}'",
            )
            await changes.arrival(RESYNC, after=before)
        request, _ = await writing.insert(make_request())
        await changes.arrival(PendingChange(CREATED, request.pending_id))
    assert any("lost" in record.getMessage() for record in caplog.records)


async def test_tables_of_version_1_gain_the_approval_columns_and_history(
    postgres_server: PostgresServer,
) -> None:
    """A database made before approvals is brought to version 2, then 3 and 4 (the outbox),
    5 (quorums), 6 (when each history was last appended to), 7 (each history's signed head,
    and the checkpoints) and 8 (the transaction of each change); its requests stay."""
    schema = new_schema()
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        old = make_request()
        await store.insert(old)
    for statement in (
        'ALTER TABLE "{s}".roomkit_pending DROP COLUMN "kind"',
        'ALTER TABLE "{s}".roomkit_pending DROP COLUMN "arguments_digest"',
        'ALTER TABLE "{s}".roomkit_pending DROP COLUMN "approvers"',
        *QUORUM_DROPS,
        'DROP TABLE "{s}".roomkit_history',
        'DROP TABLE "{s}".roomkit_outbox',
        'DROP TABLE "{s}".roomkit_chains',
        'DELETE FROM "{s}".roomkit_schema WHERE version >= 2',
    ):
        await sql(postgres_server.dsn, statement.format(s=schema))
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        read = await store.fetch(old.pending_id)
        assert await store.append_history(old.pending_id, {"type": "shown", "at": "now"}) == 0
    assert read is not None
    assert (read.kind, read.approvers) == ("question", ())
    versions = await sql(postgres_server.dsn, f'SELECT version FROM "{schema}".roomkit_schema')
    assert sorted(versions) == [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,), (9,), (10,)]


QUORUM_DROPS = tuple(
    f'ALTER TABLE "{{s}}".roomkit_pending DROP COLUMN "{name}"'
    for name in ("quorum", "veto", "voters", "votes")
)


async def test_tables_of_version_3_gain_the_quorum_columns(
    postgres_server: PostgresServer,
) -> None:
    """A database made before quorums is brought up to date on open: its approvals read as
    decided by any one approver, and a new quorum approval takes votes."""
    schema = new_schema()
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        old = await HumanInputHandler(store=store).create_approval("t", {"a": 1}, approvers=["bob"])
    for statement in (*QUORUM_DROPS, 'DELETE FROM "{s}".roomkit_schema WHERE version >= 5'):
        await sql(postgres_server.dsn, statement.format(s=schema))
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        handler = HumanInputHandler(store=store)
        read = await handler.get_request(old.pending_id)
        held = await handler.create_approval(
            "t", {"a": 1}, approvers=["bob", "ann"], quorum=2, veto=False
        )
        assert await handler.aresolve(held.pending_id, approve(), by="bob")
        voted = await handler.get_request(held.pending_id)
    assert read is not None
    assert (read.quorum, read.veto, read.voters, read.votes) == (None, True, (), ())
    assert voted is not None
    assert (voted.quorum, voted.veto, voted.approvers) == (2, False, ("ann",))
    versions = await sql(postgres_server.dsn, f'SELECT version FROM "{schema}".roomkit_schema')
    assert sorted(versions) == [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,), (9,), (10,)]


async def test_tables_of_version_7_gain_the_change_log(postgres_server: PostgresServer) -> None:
    """A database made before the change log is brought to version 8 on open: its rows read
    as before, a look names none of them until one changes, then names that one."""
    schema = new_schema()
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        old, _ = await store.insert(make_request())
        untouched, _ = await store.insert(make_request())
    for statement in (
        'ALTER TABLE "{s}".roomkit_pending DROP COLUMN changed_tx',
        'DELETE FROM "{s}".roomkit_schema WHERE version >= 8',
    ):
        await sql(postgres_server.dsn, statement.format(s=schema))
    async with PostgresStore(postgres_server.dsn, schema=schema) as store:
        first = await store.changes_since(None)
        assert (await store.changes_since(first.mark)).pending_ids == frozenset()
        assert await store.settle(old.pending_id, RESOLVED, result="yes") is not None
        assert (await store.changes_since(first.mark)).pending_ids == {old.pending_id}
        assert await store.fetch(untouched.pending_id) is not None
    versions = await sql(postgres_server.dsn, f'SELECT version FROM "{schema}".roomkit_schema')
    assert sorted(versions) == [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,), (9,), (10,)]


def _uncompressible(length: int) -> str:
    draw = random.Random(length)
    return "".join(draw.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(length))


@pytest.mark.parametrize(
    ("field", "named"),
    [
        (
            "key",
            "a request's key with its scope (room_id, channel_id, actor_id), too long for "
            "its index roomkit_pending_by_key",
        ),
        ("room_id", "a request's room_id, too long for its index roomkit_pending_open"),
    ],
)
async def test_a_value_too_long_for_an_index_is_no_outage(
    postgres_server: PostgresServer, postgres_schema: str, field: str, named: str
) -> None:
    """Past the handler's checks, the server's refusal says what was too long, and the
    store goes on (it was never unavailable)."""
    async with PostgresStore(postgres_server.dsn, schema=postgres_schema) as store:
        with pytest.raises(StoreError) as caught:
            await store.insert(make_request(**{field: _uncompressible(3_000)}))

        assert not isinstance(caught.value, StoreUnavailableError)
        assert f"refused {named} (index row size " in str(caught.value)
        assert str(caught.value).endswith(
            "nothing was stored: pass shorter ids (a create refuses those past "
            "roomkit.models.json_limits.MAX_ID_CHARS, MAX_KEY_CHARS and MAX_SCOPED_KEY_BYTES)"
        )
        record, created = await store.insert(make_request())
        assert created
        assert ids(await store.list_pending()) == [record.pending_id]

"""A closed PostgreSQL store stays closed until it is opened again, as SQLite's does: a call
after ``close()`` used to open the pool and the change feed anew behind the caller's back,
and nothing would close them again."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from tests.postgres_server import PostgresServer
from tests.tools.human_input.durable.cross_process_peer import parked
from tests.tools.human_input.stores.postgres_kit import new_schema
from tests.tools.human_input.stores.store_kit import PATIENCE, make_request

from roomkit.core.exceptions import StoreClosedError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores.postgres import PostgresStore

QUESTION = {"question": "Ship it?"}


async def sessions(server: PostgresServer, schema: str) -> int:
    """How many sessions of stores named after ``schema`` the server has."""
    async with await psycopg.AsyncConnection.connect(server.dsn, autocommit=True) as db:
        cursor = await db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (schema,)
        )
        row = await cursor.fetchone()
        assert row is not None
        return int(row[0])


def store_named(server: PostgresServer, schema: str, **options: float) -> PostgresStore:
    return PostgresStore(f"{server.dsn}?application_name={schema}", schema=schema, **options)


async def test_every_call_after_close_is_refused_until_open(
    postgres_server: PostgresServer,
) -> None:
    schema = new_schema()
    store = store_named(postgres_server, schema)
    await store.open()
    request = make_request()
    await store.insert(request)
    await store.close()

    with pytest.raises(StoreClosedError, match=r"is closed: call its open\(\)"):
        await store.fetch(request.pending_id)
    with pytest.raises(StoreClosedError):
        await store.insert(make_request())
    with pytest.raises(StoreClosedError):
        await store.list_pending()
    with pytest.raises(StoreClosedError):
        await store.settle(request.pending_id, PendingInputStatus.RESOLVED, result="yes")
    assert await sessions(postgres_server, schema) == 0

    await store.open()
    fetched = await store.fetch(request.pending_id)
    assert fetched is not None
    assert fetched.pending_id == request.pending_id
    await store.close()
    assert await sessions(postgres_server, schema) == 0


async def test_a_wait_on_a_store_closed_under_it_ends_and_opens_nothing(
    postgres_server: PostgresServer,
) -> None:
    schema = new_schema()
    store = store_named(postgres_server, schema, backstop_interval=0.02)
    await store.open()
    handler = HumanInputHandler(store=store)
    request = await handler.create("AskUserQuestion", QUESTION)
    wait = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
    await parked(handler, 1)

    # The store goes first, the handler still waiting on it.
    await store.close()
    async with asyncio.timeout(PATIENCE):
        with pytest.raises(StoreClosedError):
            await wait
    with pytest.raises(StoreClosedError):
        await handler.aresolve(request.pending_id, "yes")
    await handler.close()

    # A listener that comes now starts no feed.
    store.subscribe(lambda change: None)
    (feed,) = [task for task in asyncio.all_tasks() if "postgres feed" in task.get_name()]
    async with asyncio.timeout(PATIENCE):
        await feed
    assert await sessions(postgres_server, schema) == 0

"""PostgreSQL restarted, or the waiters' connections terminated, while 1,000 requests wait.

Every answered request is delivered to its own waiter, and none twice. Each test has a
cluster of its own, so that restarting it disturbs no other test.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import psycopg
import pytest
from tests.postgres_server import PostgresServer, running_postgres
from tests.tools.human_input.durable.test_redis_restart import (
    Desk,
    FeedWatch,
    answer_all,
    delivered,
    start_waiting,
)

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores.postgres import PostgresStore

WAITERS = "roomkit-waiters"
"""The application name of the waiting side's connections, so that they can be cut alone."""


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


async def open_handler(dsn: str, schema: str) -> tuple[HumanInputHandler, PostgresStore]:
    store = PostgresStore(dsn, schema=schema)
    await store.open()
    return HumanInputHandler(store=store), store


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_every_answer_reaches_its_waiter_across_a_restart(
    server: PostgresServer, mode: str
) -> None:
    schema = f"restart{os.urandom(4).hex()}"
    asker, asker_store = await open_handler(server.dsn, schema)
    desk_handler, desk_store = await open_handler(server.dsn, schema)
    desk = Desk(desk_handler)
    feed = FeedWatch(asker)
    try:
        async with asyncio.timeout(100):
            await feed.live_after(0)
            waits = await start_waiting(asker)

            await asyncio.to_thread(server.stop, mode=mode)
            answering = asyncio.ensure_future(answer_all(desk, list(waits)))
            # The server is back only once the desk has found it gone.
            await desk.refused.wait()
            await asyncio.to_thread(server.start)
            told = await answering

            await delivered(waits, told, desk, desk_store)  # type: ignore[arg-type]
            # The feed listens again before the handler closes.
            await feed.live_after(1)
    finally:
        await asker.close()
        await asker_store.close()
        await desk_store.close()


@pytest.mark.timeout(120)
async def test_every_answer_reaches_its_waiter_when_its_connections_are_terminated(
    server: PostgresServer,
) -> None:
    schema = f"cut{os.urandom(4).hex()}"
    asker, asker_store = await open_handler(f"{server.dsn}?application_name={WAITERS}", schema)
    desk_handler, desk_store = await open_handler(server.dsn, schema)
    desk = Desk(desk_handler)
    feed = FeedWatch(asker)
    try:
        async with asyncio.timeout(100):
            await feed.live_after(0)
            waits = await start_waiting(asker)

            async with await psycopg.AsyncConnection.connect(server.dsn, autocommit=True) as db:
                cursor = await db.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (WAITERS,),
                )
                cut = await cursor.fetchall()
            # The waiting side holds connections for reads and one for the change feed.
            assert len(cut) >= 2
            told = await answer_all(desk, list(waits))

            await delivered(waits, told, desk, desk_store)  # type: ignore[arg-type]
            await feed.live_after(1)
    finally:
        await asker.close()
        await asker_store.close()
        await desk_store.close()


@pytest.mark.timeout(120)
async def test_a_write_while_the_server_is_away_is_refused_and_nothing_is_lost(
    server: PostgresServer,
) -> None:
    schema = f"away{os.urandom(4).hex()}"
    async with PostgresStore(server.dsn, schema=schema, settle_retry=0.5) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("AskUserQuestion", {"question": "Where?"}, room_id="r")
        await asyncio.to_thread(server.stop, mode="immediate")
        try:
            with pytest.raises(StoreUnavailableError, match="unknown"):
                await handler.aresolve(request.pending_id, "Lisbon", by="desk")
            with pytest.raises(StoreUnavailableError, match="is unavailable"):
                await handler.create("AskUserQuestion", {"question": "Again?"}, room_id="r")
        finally:
            await asyncio.to_thread(server.start)
        # Refused, so not recorded: the request is still open, and answered now.
        pending = await handler.list_pending()
        assert [r.pending_id for r in pending] == [request.pending_id]
        assert await handler.aresolve(request.pending_id, "Lisbon", by="desk") is True
        assert await handler.wait(request.pending_id, timeout=30) == "Lisbon"
        await handler.close()

"""PostgreSQL away: a write meanwhile is refused, and nothing is lost (the restart tests
shared with Redis are in ``test_store_restart.py``). The test has a cluster of its own, so
that stopping it disturbs no other test.
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from tests.servers.postgres_server import PostgresServer

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.postgres import PostgresStore
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture
def server(postgres_restartable: PostgresServer) -> PostgresServer:
    return postgres_restartable


@pytest.mark.timeout(120)
async def test_a_write_while_the_server_is_away_is_refused_and_nothing_is_lost(
    server: PostgresServer, postgres_schema: str
) -> None:
    async with PostgresStore(
        server.dsn, schema=postgres_schema, settle_retry=0.5, connect_timeout=1
    ) as store:
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
        await open_then_answered(handler, request.pending_id)
        await handler.close()


async def open_then_answered(handler: HumanInputHandler, pending_id: str) -> None:
    """The one request still open is listed, then answered and heard."""
    pending = await handler.list_pending()
    assert [r.pending_id for r in pending] == [pending_id]
    assert await handler.aresolve(pending_id, "Lisbon", by="desk") is True
    assert await handler.wait(pending_id, timeout=30) == "Lisbon"


@pytest.mark.timeout(120)
async def test_the_store_answers_once_the_server_is_back_however_long_it_was_away(
    server: PostgresServer, postgres_schema: str
) -> None:
    # psycopg_pool's own reconnection waits 1, 2, 4, 8 s ... between attempts: left to it,
    # a store whose server was away 4 s would stay unavailable up to 3 s longer, past the
    # half second the call after the restart has.
    async with PostgresStore(server.dsn, schema=postgres_schema, connect_timeout=0.5) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("AskUserQuestion", {"question": "Where?"}, room_id="r")
        await asyncio.to_thread(server.stop, mode="immediate")
        try:
            for _ in range(8):  # each refused after its 0.5 s: the server is away ~4 s
                with pytest.raises(StoreUnavailableError, match="is unavailable"):
                    await handler.list_pending()
        finally:
            await asyncio.to_thread(server.start)
        pending = await handler.list_pending()
        assert [r.pending_id for r in pending] == [request.pending_id]
        await handler.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_no_call_is_refused_once_the_server_has_restarted(
    server: PostgresServer, postgres_schema: str, mode: str
) -> None:
    # A restart closes every connection idle in the pool; none of them may fail a call.
    async with PostgresStore(server.dsn, schema=postgres_schema) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("AskUserQuestion", {"question": "Where?"}, room_id="r")
        await asyncio.gather(*(handler.list_pending() for _ in range(4)))
        await asyncio.to_thread(server.stop, mode=mode)
        await asyncio.to_thread(server.start)
        for _ in range(3):
            pending = await handler.list_pending()
            assert [r.pending_id for r in pending] == [request.pending_id]
        await open_then_answered(handler, request.pending_id)
        await handler.close()


@pytest.mark.timeout(120)
async def test_a_call_queued_for_a_connection_when_the_server_goes_gives_up_in_time(
    server: PostgresServer, postgres_schema: str
) -> None:
    # A call queued on a busy pool may wait a minute for a connection; once the server is
    # gone it must give up within connect_timeout, not wait out that minute.
    schema = postgres_schema
    async with PostgresStore(server.dsn, schema=schema, pool_size=1, connect_timeout=1) as store:
        await store.list_pending()
        locker = await psycopg.AsyncConnection.connect(server.dsn)
        try:
            await locker.execute(f'LOCK TABLE "{schema}".roomkit_pending IN ACCESS EXCLUSIVE MODE')
            holding = asyncio.create_task(store.list_pending())  # takes the one connection
            await blocked_on_a_lock(server, schema)
            queued = asyncio.create_task(store.list_pending())  # waits for that connection
            await asyncio.to_thread(server.stop, mode="immediate")
            try:
                async with asyncio.timeout(30):
                    for call in (holding, queued):
                        with pytest.raises(StoreUnavailableError):
                            await call
            finally:
                await asyncio.to_thread(server.start)
        finally:
            await locker.close()  # the server killed it
        assert await store.list_pending() == []


async def blocked_on_a_lock(server: PostgresServer, schema: str) -> None:
    """Return once a session of the server waits on a lock (the store's read)."""
    async with await psycopg.AsyncConnection.connect(server.dsn, autocommit=True) as db:
        while True:
            cursor = await db.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            )
            row = await cursor.fetchone()
            if row is not None and row[0]:
                return
            await db.execute("SELECT pg_sleep(0.01)")

"""More calls of a PostgreSQL store at once than its pool has connections, each held long, on
a server that answers.

A call that queues for a connection past the pool's bound fails saying the pool was busy,
how big it is and what to change, not that the server is down; and the store does not take
the server for down: the calls that queue next wait as long, and the store answers at once
when the connection is free again.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool
from tests.servers.postgres_server import PostgresServer
from tests.tools.human_input.stores.store_kit import PATIENCE, make_request

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.postgres import PostgresStore, _link

SHORT = 0.2
"""The bound of the queue for a connection, made short here (60 s by default) only while the
pool's one connection is held: the first call waits for the pool to make its connection,
which a loaded machine may take longer than that to do."""


OWN = "raise the store's pool_size (pool_size=2, or ?pool_size=2 in its URL)"
BORROWED = "raise the max_size of the pool you pass (max_size=2)"


def assert_busy(error: BaseException | None, advice: str) -> None:
    """``error`` says the pool of one connection was busy, and nothing of a server down."""
    assert isinstance(error, StoreUnavailableError), error
    message = str(error)
    assert "is busy: no connection was free for 0.2 s" in message, message
    assert "all 1 connections of the store's pool stayed busy with other calls" in message
    assert f"{advice} or make fewer calls at once" in message, message
    assert "unavailable" not in message, message
    assert "check that the server runs" not in message, message


async def store_of_one_connection(
    dsn: str, schema: str, pool: str, stack: AsyncExitStack
) -> PostgresStore:
    """An open store on ``schema`` whose pool has one connection: its own (sized by
    ``pool_size=`` or by the URL's ``?pool_size=``), or one it is given."""
    if pool == "own":
        store = PostgresStore(dsn, schema=schema, pool_size=1)
    elif pool == "url":
        store = PostgresStore(f"{dsn}?pool_size=1", schema=schema)
    else:
        given = AsyncConnectionPool(dsn, min_size=1, max_size=1, open=False)
        stack.push_async_callback(given.close)
        store = PostgresStore(given, schema=schema)
    assert store.pool_size == 1
    return await stack.enter_async_context(store)


@pytest.mark.parametrize(("pool", "advice"), [("own", OWN), ("url", OWN), ("borrowed", BORROWED)])
async def test_a_queue_past_the_pools_bound_says_the_pool_was_busy(
    postgres_server: PostgresServer,
    postgres_schema: str,
    monkeypatch: pytest.MonkeyPatch,
    pool: str,
    advice: str,
) -> None:
    """A pool of one connection, held by a read that a lock of another connection keeps
    waiting: the read that queues behind it fails as busy, so does the next one (no fail
    fast), and once the lock goes both the held read and a new one answer."""
    async with asyncio.timeout(PATIENCE), AsyncExitStack() as stack:
        store = await store_of_one_connection(postgres_server.dsn, postgres_schema, pool, stack)
        request, _ = await store.insert(make_request())
        async with await psycopg.AsyncConnection.connect(postgres_server.dsn) as locker:
            await locker.execute(
                f'LOCK TABLE "{store.schema}".roomkit_pending IN ACCESS EXCLUSIVE MODE'
            )
            with monkeypatch.context() as patched:
                patched.setattr(_link, "QUEUE_TIMEOUT", SHORT)
                # Whichever read takes the connection waits for the lock; the other queues.
                reads = [asyncio.create_task(store.fetch(request.pending_id)) for _ in range(2)]
                done, waiting = await asyncio.wait(reads, return_when=asyncio.FIRST_COMPLETED)
                (queued,) = done
                (held,) = waiting
                assert_busy(queued.exception(), advice)

                with pytest.raises(StoreUnavailableError) as next_call:
                    await store.fetch(request.pending_id)
                assert_busy(next_call.value, advice)
            assert not held.done()
            await locker.rollback()

        fetched = await held
        assert fetched is not None
        assert fetched.pending_id == request.pending_id
        again = await store.fetch(request.pending_id)
        assert again is not None
        assert again.pending_id == request.pending_id

"""The Postgres store through PgBouncer in transaction mode, where LISTEN cannot work: the
store says so once and its waiters hear of answers by polling."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool
from tests.pgbouncer_server import pgbouncer_in_transaction_mode
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.postgres_kit import new_schema

from roomkit.stores.postgres import PostgresStore
from roomkit.tools.human_input import HumanInputHandler

LOGGER = "roomkit.tools.human_input.stores.postgres"


@pytest.fixture
def bouncer(postgres_server: PostgresServer) -> Iterator[str]:
    with pgbouncer_in_transaction_mode(postgres_server) as dsn:
        yield dsn


@pytest.fixture
async def pool(bouncer: str) -> AsyncIterator[AsyncConnectionPool[psycopg.AsyncConnection[object]]]:
    # Transaction pooling keeps no prepared statement from one transaction to the next.
    made: AsyncConnectionPool[psycopg.AsyncConnection[object]] = AsyncConnectionPool(
        bouncer, open=False, kwargs={"autocommit": True, "prepare_threshold": None}
    )
    yield made
    await made.close()


class Warnings(logging.Handler):
    """Collects the store's warnings; ``polling`` is set by the one that says it polls."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.loop = asyncio.get_running_loop()
        self.polling = asyncio.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        if "LISTEN does not work" in message:
            self.loop.call_soon_threadsafe(self.polling.set)


async def test_through_transaction_pooling_the_store_polls_after_one_warning(
    postgres_server: PostgresServer,
    pool: AsyncConnectionPool[psycopg.AsyncConnection[object]],
) -> None:
    warnings = Warnings()
    logging.getLogger(LOGGER).addHandler(warnings)
    schema = new_schema()
    try:
        async with PostgresStore(pool, schema=schema, backstop_interval=0.05) as store:
            handler = HumanInputHandler(store=store)
            handler.subscribe(lambda change: None)
            await asyncio.wait_for(warnings.polling.wait(), timeout=30)
            async with PostgresStore(postgres_server.dsn, schema=schema) as elsewhere:
                answered = HumanInputHandler(store=elsewhere)
                for n in range(3):
                    asked = await handler.create("AskUserQuestion", {"n": n}, room_id="r")
                    waiting = asyncio.create_task(handler.wait(asked.pending_id, timeout=30))
                    assert await answered.aresolve(asked.pending_id, f"yes {n}", by="alice")
                    assert await waiting == f"yes {n}"
                # Settles through the pooler, many at once, each with one winner.
                many = [
                    (await handler.create("AskUserQuestion", {"n": n}, room_id="r")).pending_id
                    for n in range(20)
                ]
                won = await asyncio.gather(
                    *(handler.aresolve(pending_id, "ok", by="bob") for pending_id in many),
                    *(answered.aresolve(pending_id, "no", by="carol") for pending_id in many),
                )
                assert sum(won) == len(many)
                await answered.close()
            await handler.close()
    finally:
        logging.getLogger(LOGGER).removeHandler(warnings)
    assert [m for m in warnings.messages if "LISTEN does not work" in m] == warnings.messages[:1]

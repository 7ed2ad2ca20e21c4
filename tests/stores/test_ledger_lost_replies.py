"""A ledger spend or refund that lands while its caller never hears of it
is reported as it landed: the store runs it again with its token until the server answers.

A relay lets the write reach the server, drops the reply and cuts the connection, as a
server killed at that moment does. On Redis the client sends nothing again
(``Retry(..., 0)``), as when its own re-send finds the server still away; on PostgreSQL the
reply lost is the COMMIT's. Told of no outcome, a caller could only spend again and be
refused: a single-use link burned with nobody having used it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from tests.servers.postgres_server import PostgresServer
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.stores.redis_relay import Gate, Relay
from tests.tools.human_input.stores.test_reassignment_kills import through

from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore

Relayed = tuple[Relay, RedisStore]


@pytest.fixture
async def relayed(redis_server: RedisServer) -> AsyncIterator[Relayed]:
    """A Redis store reaching its server through a relay, its client never sending again."""
    async with Relay(redis_server.port) as relay:
        client = Redis.from_url(relay.url, retry=Retry(NoBackoff(), 0))
        try:
            async with RedisStore(client=client, prefix=fresh_prefix()) as store:
                # The server learns the scripts now: the reply a test loses is the spend's
                # or the refund's, not the server's word that it does not know the script.
                assert await store.spend_once("warm-up", until=None)
                await store.refund_spent("warm-up")
                yield relay, store
        finally:
            await client.aclose()


async def test_a_spend_whose_reply_is_lost_is_reported_won(relayed: Relayed) -> None:
    relay, store = relayed
    relay.lose_reply_to(b"link:lost-spend")
    assert await store.spend_once("link:lost-spend", until=None) is True
    assert relay.lost.is_set(), "the spend reached the server"
    assert await store.spend_once("link:lost-spend", until=None) is False


async def test_a_refund_whose_reply_is_lost_leaves_the_entry_spendable(relayed: Relayed) -> None:
    relay, store = relayed
    assert await store.spend_once("link:lost-refund", until=None)
    relay.lose_reply_to(b"link:lost-refund")
    await store.refund_spent("link:lost-refund")
    assert relay.lost.is_set(), "the refund reached the server"
    assert await store.spend_once("link:lost-refund", until=None) is True


async def test_a_postgres_spend_whose_commit_reply_is_lost_is_reported_won(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    """The relay drops the reply to the spend's COMMIT and cuts the connection: the row is
    in, and the store, running the spend again with its token, finds it its own."""
    async with Relay(postgres_server.port) as relay:
        dsn = through(postgres_server.dsn, relay.port)
        async with PostgresStore(dsn, schema=postgres_schema) as store:
            assert await store.spend_once("warm-up", until=None)
            relay.lose_reply_to(b"COMMIT")
            assert await store.spend_once("link:lost-commit", until=None) is True
            assert relay.lost.is_set(), "the spend's COMMIT reached the server"
            assert await store.spend_once("link:lost-commit", until=None) is False


async def test_a_postgres_refund_whose_reply_is_lost_leaves_a_later_spend_alone(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    """The relay drops the reply to the refund (a statement that commits) and cuts the
    connection, then holds the refund's next attempt while another process spends the entry
    again: the attempt, carrying the refund's token, finds the refund done and leaves that
    spend as it is."""
    schema, entry = postgres_schema, "link:lost-refund"
    async with Relay(postgres_server.port) as relay:
        dsn = through(postgres_server.dsn, relay.port)
        async with (
            PostgresStore(dsn, schema=schema) as store,
            PostgresStore(postgres_server.dsn, schema=schema) as other,
        ):
            assert await store.spend_once(entry, until=None)
            gates: list[Gate] = []
            relay.call_before(entry.encode(), lambda: gates.append(relay.gate(entry.encode())))
            relay.lose_reply_to(entry.encode())
            refund = asyncio.create_task(store.refund_spent(entry))
            await relay.lost.wait()
            held = asyncio.create_task(gates[0].holding(1))
            await asyncio.wait({refund, held}, return_when=asyncio.FIRST_COMPLETED)
            if refund.done():
                held.cancel()
                refund.result()  # a refund that failed says why
            assert await other.spend_once(entry, until=None), "the refund landed"
            gates[0].open()
            await refund
            assert await other.spend_once(entry, until=None) is False
            assert entry in await store.read_spent([entry])

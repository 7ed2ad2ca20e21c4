"""More calls of a Redis store at once than its pool has connections.

The calls beyond the pool queue for a connection, and the store's ``timeout`` counts only
the server's answer, not the queue: a burst on a server that answers completes, however
long the queue. A queue longer than the pool's own bound fails saying the pool is too small
and what to do, not that the server is down; a frozen server still fails every call of the
burst as not answering.

A relay holds the call on the pool's one connection, so that the queue lasts as long as the
test needs; the stores' ``timeout`` is far past what a call the server answers takes, even on
a loaded machine, so that only the calls held, or met by a frozen server, reach it.
"""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import BlockingConnectionPool, Redis
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.stores.redis_relay import Gate, Relay
from tests.tools.human_input.stores.store_kit import PATIENCE, make_request

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.redis import RedisStore

BURST = 20
"""Calls made at once, on a pool of one or two connections."""
TIMEOUT = 2.0
"""The stores' ``timeout``: waited out by the calls held, never reached by the others."""


async def fetched(store: RedisStore, pending_id: str) -> bool:
    return await store.fetch(pending_id) is not None


async def held_on_the_connection(store: RedisStore, gate: Gate) -> None:
    """Hold the pool's one connection with an insert the relay holds, its caller gone: its
    batch goes on with nothing waiting on it, so nothing times out on it, and the
    connection stays busy until the gate opens."""
    caller = asyncio.create_task(store.insert(make_request(pending_id="held-insert")))
    await gate.holding(1)
    caller.cancel()
    await asyncio.gather(caller, return_exceptions=True)


async def test_a_burst_queued_longer_than_its_timeout_completes(relay: Relay) -> None:
    """One connection, held while a burst queues for it until a call made after the burst,
    that the server never answers, times out: once the connection is free, every call of
    the burst succeeds."""
    prefix = fresh_prefix()
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(f"{relay.url}?max_connections=1", prefix=prefix, timeout=TIMEOUT) as store,
        RedisStore(relay.url, prefix=prefix, timeout=TIMEOUT) as elsewhere,
    ):
        request, _ = await store.insert(make_request())
        gate = relay.gate(b"held-")
        await held_on_the_connection(store, gate)
        burst = [asyncio.create_task(fetched(store, request.pending_id)) for _ in range(BURST)]
        # Made just after the burst, through a store of its own: it times out once the
        # burst's timeout has passed too.
        relay.hold(b"witness")
        witness = asyncio.create_task(elsewhere.insert(make_request(pending_id="witness")))
        with pytest.raises(StoreUnavailableError, match=r"did not answer within 2 s"):
            await witness
        gate.open()
        found = await asyncio.gather(*burst)

    assert found == [True] * BURST


async def test_a_queue_past_the_pools_bound_says_the_pool_is_too_small(relay: Relay) -> None:
    """A client whose pool waits 0.01 s for a connection, its one connection held: the calls
    that queue for it fail naming the pool's size and what to change, and nothing says the
    server is down; the held call is answered once let through."""
    pool = BlockingConnectionPool.from_url(
        relay.url, max_connections=1, timeout=0.01, decode_responses=True
    )
    client = Redis(connection_pool=pool)
    try:
        async with (
            asyncio.timeout(PATIENCE),
            RedisStore(client=client, prefix=fresh_prefix()) as store,
        ):
            gate = relay.gate(b"held-")
            held = asyncio.create_task(store.fetch("held-read"))
            await gate.holding(1)
            outcomes = await asyncio.gather(
                *(store.fetch("queued-read") for _ in range(BURST)), return_exceptions=True
            )
            gate.open()
            assert await held is None
    finally:
        await client.aclose()

    for error in outcomes:
        assert isinstance(error, StoreUnavailableError), error
        message = str(error)
        assert "all 1 connections of the store's pool stayed busy" in message, message
        assert "raise max_connections in the URL (?max_connections=2)" in message, message
        assert "did not answer" not in message, message
        assert "cannot be reached" not in message, message


async def test_a_burst_on_a_frozen_server_fails_as_not_answering(
    redis_restartable: RedisServer,
) -> None:
    """The calls queued behind the pool fail as the ones on its connections do; once the
    server runs again, the store answers."""
    url = f"{redis_restartable.url}?max_connections=2"
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(url, prefix=fresh_prefix(), timeout=TIMEOUT, settle_retry=0) as store,
    ):
        request, _ = await store.insert(make_request())
        with redis_restartable.frozen():
            outcomes = await asyncio.gather(
                *(fetched(store, request.pending_id) for _ in range(BURST)),
                return_exceptions=True,
            )
        assert await fetched(store, request.pending_id)

    for error in outcomes:
        assert isinstance(error, StoreUnavailableError), error
        assert "did not answer within 2 s" in str(error), error


@pytest.mark.parametrize("size", ["-1", "many"])
def test_a_pool_size_that_is_no_number_is_refused(size: str) -> None:
    with pytest.raises(ValueError, match="max_connections"):
        RedisStore(f"redis://127.0.0.1:1/0?max_connections={size}")

"""More calls of a Redis store at once than its batches in flight take.

A store sends the inserts of one loop turn as one batch, with at most four batches in flight;
the calls made meanwhile queue for the next. A call's ``timeout`` counts from when its batch
is sent, not its queue: calls queued behind batches the server is slow to answer complete,
however long they queued. A queue that never moves fails saying the store was busy, not
that the server is down; a frozen server still fails the calls queued, as not answering.

A relay holds the batches in flight, so that the queue lasts as long as the test needs; the
stores' ``timeout`` is far past what a call the server answers takes, even on a loaded
machine, so that only the calls held, or met by a frozen server, reach it.
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

IN_FLIGHT = 4
"""The batches of inserts a store has in flight at most."""
TIMEOUT = 2.0
"""The stores' ``timeout``: waited out by the calls held, never reached by the others."""
QUEUED = 8
"""Calls queued behind the batches in flight."""


async def held_in_flight(store: RedisStore, gate: Gate) -> None:
    """Fill the store's batches in flight with inserts the relay holds, their callers gone:
    nothing waits on them, so nothing times out on them, and they stay in flight."""
    callers = []
    for n in range(IN_FLIGHT):
        request = make_request(pending_id=f"in-flight-{n}")
        callers.append(asyncio.create_task(store.insert(request)))
        await gate.holding(n + 1)  # a batch of its own
    for caller in callers:
        caller.cancel()
    await asyncio.gather(*callers, return_exceptions=True)


def queue_inserts(store: RedisStore) -> list[asyncio.Task[object]]:
    return [
        asyncio.create_task(store.insert(make_request(pending_id=f"queued-{n}")))
        for n in range(QUEUED)
    ]


async def test_calls_queued_longer_than_their_timeout_complete(relay: Relay) -> None:
    """Calls queued behind held batches while a call made after them, that the server never
    answers, times out: once the batches are answered, every queued call is created."""
    prefix = fresh_prefix()
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(relay.url, prefix=prefix, timeout=TIMEOUT) as store,
        RedisStore(relay.url, prefix=prefix, timeout=TIMEOUT) as elsewhere,
    ):
        await store.insert(make_request())  # the script is loaded
        gate = relay.gate(b"in-flight-")
        await held_in_flight(store, gate)
        queued = queue_inserts(store)
        # Made just after the queued calls, through a store of its own: it times out once
        # their timeout has passed too.
        relay.hold(b"witness")
        witness = asyncio.create_task(elsewhere.insert(make_request(pending_id="witness")))
        with pytest.raises(StoreUnavailableError, match=r"did not answer within 2 s"):
            await witness
        gate.open()
        outcomes = await asyncio.gather(*queued, return_exceptions=True)

    for outcome in outcomes:
        assert isinstance(outcome, tuple), outcome
        assert outcome[1] is True


async def test_a_queue_that_never_moves_says_the_store_is_busy(relay: Relay) -> None:
    """A client whose pool lets a call wait 2 s for its turn: the calls queued behind
    batches that never end fail saying the store was busy, nothing says the server is down."""
    pool = BlockingConnectionPool.from_url(relay.url, timeout=TIMEOUT)
    client = Redis(connection_pool=pool)
    try:
        async with (
            asyncio.timeout(PATIENCE),
            RedisStore(client=client, prefix=fresh_prefix(), timeout=TIMEOUT) as store,
        ):
            await store.insert(make_request())
            gate = relay.gate(b"in-flight-")
            await held_in_flight(store, gate)
            outcomes = await asyncio.gather(*queue_inserts(store), return_exceptions=True)
            gate.open()
    finally:
        await client.aclose()

    assert all(isinstance(error, StoreUnavailableError) for error in outcomes), outcomes
    for message in map(str, outcomes):
        assert "is busy: the call waited 2 s for its turn to be sent" in message, message
        assert message.endswith("make fewer calls at once"), message
        assert not any(down in message for down in ("did not answer", "be reached")), message


async def test_calls_queued_on_a_frozen_server_fail_as_not_answering(
    redis_restartable: RedisServer,
) -> None:
    """A burst past the batches in flight, on a client without socket timeouts: the batches
    wait as long as the server is frozen, and the calls queued behind them fail as not
    answering once the first calls did, as every call of the burst does. Once the server
    runs again, a store on the same client creates a request."""
    client = Redis.from_url(redis_restartable.url, socket_timeout=None)
    prefix = fresh_prefix()
    try:
        async with (
            asyncio.timeout(PATIENCE),
            RedisStore(client=client, prefix=prefix, timeout=TIMEOUT) as store,
            # Of the default timeout: the server first works through the burst's batches.
            RedisStore(client=client, prefix=prefix) as patient,
        ):
            await store.insert(make_request())
            burst = [make_request() for _ in range(IN_FLIGHT * 256 + QUEUED)]
            with redis_restartable.frozen():
                outcomes = await asyncio.gather(*map(store.insert, burst), return_exceptions=True)
            assert (await patient.insert(make_request()))[1]
    finally:
        await client.aclose()

    for error in outcomes:
        assert isinstance(error, StoreUnavailableError), error
        assert "did not answer within 2 s" in str(error), error

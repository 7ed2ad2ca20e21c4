"""More calls of a Redis store at once than its pool has connections.

The calls beyond the pool queue for a connection, and the store's ``timeout`` counts only
the server's answer, not the queue: a burst on a server that answers completes, however
long the queue. A queue longer than the pool's own bound fails saying the pool is too small
and what to do, not that the server is down; a frozen server still fails every call of the
burst as not answering.
"""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import BlockingConnectionPool, Redis
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.stores.store_kit import PATIENCE, make_request

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.redis import RedisStore

BURST = 200
"""Calls made at once, on a pool of one or two connections."""
BIG = "x" * 1_000_000
"""A question long enough that each read holds its connection a while: the queue of the
burst then takes several times the short timeout below, and one read a small part of it."""
SHORT = 0.25


async def fetched(store: RedisStore, pending_id: str) -> bool:
    """Read the request and drop it (a burst of reads of it would hold them all at once)."""
    return await store.fetch(pending_id) is not None


async def test_a_burst_beyond_the_pool_completes_within_a_short_timeout(
    redis_server: RedisServer,
) -> None:
    """One connection and a timeout shorter than the whole queue: every call succeeds."""
    url = f"{redis_server.url}?max_connections=1"
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(url, prefix=fresh_prefix(), timeout=SHORT) as store,
    ):
        request, _ = await store.insert(make_request(arguments={"question": BIG}))
        found = await asyncio.gather(*(fetched(store, request.pending_id) for _ in range(BURST)))

    assert found == [True] * BURST


async def test_a_queue_past_the_pools_bound_says_the_pool_is_too_small(
    redis_server: RedisServer,
) -> None:
    """A client whose pool waits 0.01 s for a connection: the calls that queue longer fail
    naming the pool's size and what to change, and nothing says the server is down."""
    pool = BlockingConnectionPool.from_url(
        redis_server.url, max_connections=1, timeout=0.01, decode_responses=True
    )
    client = Redis(connection_pool=pool)
    try:
        async with (
            asyncio.timeout(PATIENCE),
            RedisStore(client=client, prefix=fresh_prefix()) as store,
        ):
            request, _ = await store.insert(make_request(arguments={"question": BIG}))
            outcomes = await asyncio.gather(
                *(fetched(store, request.pending_id) for _ in range(BURST)),
                return_exceptions=True,
            )
    finally:
        await client.aclose()

    refused = [outcome for outcome in outcomes if outcome is not True]
    assert refused
    for error in refused:
        assert isinstance(error, StoreUnavailableError), error
        message = str(error)
        assert "all 1 connections of the store's pool stayed busy" in message, message
        assert "raise max_connections in the URL (?max_connections=2)" in message, message
        assert "did not answer" not in message, message
        assert "cannot be reached" not in message, message


async def test_a_burst_on_a_frozen_server_fails_as_not_answering(
    redis_restartable: RedisServer,
) -> None:
    """The calls queued behind the pool fail as the ones on its connections do."""
    url = f"{redis_restartable.url}?max_connections=2"
    async with (
        asyncio.timeout(PATIENCE),
        RedisStore(url, prefix=fresh_prefix(), timeout=SHORT, settle_retry=0) as store,
    ):
        request, _ = await store.insert(make_request())
        redis_restartable.pause()
        try:
            outcomes = await asyncio.gather(
                *(fetched(store, request.pending_id) for _ in range(20)),
                return_exceptions=True,
            )
        finally:
            redis_restartable.resume()
        assert await fetched(store, request.pending_id)

    for error in outcomes:
        assert isinstance(error, StoreUnavailableError), error
        assert "did not answer within 0.25 s" in str(error), error


@pytest.mark.parametrize("size", ["-1", "many"])
def test_a_pool_size_that_is_no_number_is_refused(size: str) -> None:
    with pytest.raises(ValueError, match="max_connections"):
        RedisStore(f"redis://127.0.0.1:1/0?max_connections={size}")

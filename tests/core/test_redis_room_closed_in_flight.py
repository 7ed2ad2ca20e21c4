"""A call in flight while a Redis room store closes leaves no connection open once it ends.

Closing the store cuts the connection the call waits on; the client then tries the call
again on a new connection, which it gives back to the store's pool when the call ends. The
pool then disconnects it, as nothing else would. The store connects again on the next call
after :meth:`~RedisRoomStore.close`, and its pool keeps connections again from then on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from redis import Redis as SyncRedis
from tests.core.conftest import fresh_prefix
from tests.servers.redis_server import RedisServer
from tests.tools.human_input.stores.redis_relay import Relay, decoding_client, unclosed
from tests.traced_memory import collecting_only_new

from roomkit.models.room import Room
from roomkit.stores.redis import RedisRoomStore, RedisStore


@pytest.fixture
def prefix() -> str:
    return fresh_prefix()


@pytest.fixture
def server_stats(redis_server: RedisServer) -> Iterator[SyncRedis]:
    """A client of its own, to read how many connections the server has accepted."""
    client = SyncRedis.from_url(redis_server.url)
    yield client
    client.close()


def accepted(stats: SyncRedis) -> int:
    """The connections the server has accepted since it started."""
    return int(stats.info("stats")["total_connections_received"])


@pytest.fixture(autouse=True)
def only_new_objects_collected() -> Iterator[None]:
    """The collection that finds unclosed connections walks this test's objects alone."""
    with collecting_only_new():
        yield


@pytest.mark.parametrize("given", ["url", "decoding client"])
async def test_a_room_call_in_flight_at_close_leaves_no_connection_open(
    relay: Relay, prefix: str, given: str
) -> None:
    # Either way the store makes a pool of its own, and owns it.
    if given == "decoding client":
        rooms = RedisRoomStore(client=decoding_client(relay.url), prefix=prefix)
    else:
        rooms = RedisRoomStore(relay.url, prefix=prefix)
    await rooms.create_room(Room("in-flight-at-close"))

    held = relay.hold(b"in-flight-at-close")  # the read of the room's record
    read = asyncio.create_task(rooms.get_room("in-flight-at-close"))
    await held.wait()
    await rooms.close()
    # The close cut the held connection; the client read again on a new one.
    room = await read
    assert room is not None
    assert room.id == "in-flight-at-close"

    del rooms, read
    assert unclosed(relay.port) == []


async def test_a_room_store_used_after_close_keeps_its_connection(
    redis_server: RedisServer, server_stats: SyncRedis, prefix: str
) -> None:
    rooms = RedisRoomStore(redis_server.url, prefix=prefix)
    await rooms.create_room(Room("r1"))
    await rooms.close()

    assert await rooms.get_room("r1") is not None  # connects again
    before = accepted(server_stats)
    assert await rooms.get_room("r1") is not None
    assert accepted(server_stats) == before  # on the connection the last call gave back
    await rooms.close()


async def test_closing_a_room_store_beside_leaves_the_shared_pool_open(
    redis_server: RedisServer, server_stats: SyncRedis, prefix: str
) -> None:
    async with RedisStore(redis_server.url, prefix=prefix) as store:
        rooms = RedisRoomStore.beside(store)
        await rooms.create_room(Room("r1"))
        await rooms.close()

        assert await store.fetch("nobody") is None
        before = accepted(server_stats)
        assert await store.fetch("nobody") is None
        assert accepted(server_stats) == before  # the request store's pool keeps it

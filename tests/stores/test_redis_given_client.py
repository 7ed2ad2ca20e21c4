"""A Redis store given the application's client, made with ``decode_responses=True``.

The stores read replies as bytes, so that bytes no store writes (not UTF-8) are named as a
corrupt record: beside a client that decodes replies, a store makes a client of its own to
the same server, with the same connection class and settings, closes it when the store
closes, and leaves the application's client open. A pool the store cannot rebuild is refused
when the store is made, saying what to pass instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from redis.asyncio import Connection, ConnectionPool, Redis, Sentinel
from redis.asyncio.sentinel import SentinelManagedConnection
from tests.servers.redis_server import RedisServer, running_redis, running_sentinel
from tests.servers.stores import fresh_prefix
from tests.tools.human_input.stores.store_kit import RESYNC, Changes, make_request

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.models.room import Room, RoomEvent, TextContent
from roomkit.stores import new_entry
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.stores.redis import RedisRoomStore, RedisStore

NOT_UTF8 = b'{"type": "\xff\xfe"}'
"""A history entry or an event as bytes no store writes."""


class Counted(Connection):
    """redis-py's TCP connection, each one made kept in ``made`` (one list per subclass)."""

    made: ClassVar[list[Connection]]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.made.append(self)


def _reading_bytes(connections: list[Connection]) -> list[Connection]:
    """The connections among ``connections`` that do not decode replies: the store's own."""
    return [connection for connection in connections if not connection.encoder.decode_responses]


def _closed_own(connections: list[Connection]) -> list[Connection]:
    """The store's own connections among ``connections``, checked to be of the client's
    connection class and closed with the store."""
    own = _reading_bytes(connections)
    assert own, "the store's connections are of the client's connection class"
    assert not any(connection.is_connected for connection in own)
    return own


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A plain client reading bytes, to write what no store writes."""
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


@pytest.fixture
async def app_client(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """The application's one client: it decodes replies, its connections are counted."""
    counted = type("AppConnection", (Counted,), {"made": []})
    client = Redis.from_url(
        redis_server.url, decode_responses=True, connection_class=counted, client_name="app"
    )
    yield client
    await client.aclose()


async def _use_requests(store: RedisStore, raw: Redis) -> None:
    """Create, settle, hear of it, and read two histories, one holding bytes not UTF-8."""
    heard = Changes()
    store.subscribe(heard)
    await heard.arrival(RESYNC)  # the change feed is live
    kept, _ = await store.insert(make_request(pending_id=f"{store.prefix}-kept"))
    broken, created = await store.insert(make_request(pending_id=f"{store.prefix}-broken"))
    assert created
    for request in (kept, broken):
        await store.append_history(request.pending_id, new_entry("shown", surface="desk"))
    settled = await store.settle(kept.pending_id, PendingInputStatus.RESOLVED, result="blue")
    assert settled is not None
    fetched = await store.fetch(kept.pending_id)
    assert fetched is not None
    assert (fetched.status, fetched.result) == (PendingInputStatus.RESOLVED, "blue")
    await raw.rpush(f"{store.prefix}:h:{broken.pending_id}", NOT_UTF8)

    assert [entry["type"] for entry in await store.read_history(kept.pending_id)] == ["shown"]
    with pytest.raises(CorruptRecordError, match=f"history of '{broken.pending_id}'.*UTF-8"):
        await store.read_history(broken.pending_id)
    await heard.arrival(PendingChange(PendingChangeKind.SETTLED, kept.pending_id))


async def test_a_request_store_given_a_decoding_client_works_and_leaves_it_open(
    redis_server: RedisServer, app_client: Redis, raw: Redis
) -> None:
    prefix = fresh_prefix()
    async with RedisStore(client=app_client, prefix=prefix) as store:
        assert store.where == redis_server.url
        await _use_requests(store, raw)

    own = _closed_own(app_client.connection_pool.connection_class.made)  # type: ignore[attr-defined]
    assert {connection.client_name for connection in own} == {"app"}  # and its settings
    # The application's client is open, and still decodes.
    assert await app_client.hget(f"{prefix}:p:{prefix}-kept", "status") == "resolved"


async def test_a_room_store_given_a_decoding_client_works_and_leaves_it_open(
    app_client: Redis, raw: Redis
) -> None:
    prefix = fresh_prefix()
    async with RedisRoomStore(client=app_client, prefix=prefix) as rooms:
        await rooms.create_room(Room("r1", {"topic": "trip"}))
        await rooms.add_event(RoomEvent("r1", "ws", "alice", TextContent("hi")))
        await rooms.create_room(Room("r2"))
        await rooms.add_event(RoomEvent("r2", "ws", "bob", TextContent("yo")))
        await raw.lset(f"{prefix}:rooms:events:r2", 0, NOT_UTF8)

        room = await rooms.get_room("r1")
        assert room is not None
        assert room.metadata == {"topic": "trip"}
        assert [event.content.body for event in await rooms.list_events("r1")] == ["hi"]
        with pytest.raises(CorruptRecordError, match="an event of room 'r2'"):
            await rooms.list_events("r2")

    _closed_own(app_client.connection_pool.connection_class.made)  # type: ignore[attr-defined]
    assert await app_client.exists(f"{prefix}:rooms:room:r1") == 1
    assert await app_client.lindex(f"{prefix}:rooms:events:r1", 0) is not None


async def test_a_store_given_a_decoding_client_of_a_sentinel_asks_the_sentinel_too(
    tmp_path: Path,
) -> None:
    """The store's own pool finds the master through the same Sentinel, and is closed."""
    (tmp_path / "master").mkdir()
    (tmp_path / "sentinel").mkdir()
    with (
        running_redis(tmp_path / "master") as master,
        running_sentinel(tmp_path / "sentinel", master, "app") as port,
    ):
        sentinel = Sentinel([("127.0.0.1", port)])
        counted = type("AppConnection", (Counted, SentinelManagedConnection), {"made": []})
        client = sentinel.master_for("app", decode_responses=True, connection_class=counted)
        raw = Redis.from_url(master.url)
        try:
            async with RedisStore(client=client) as store:
                await _use_requests(store, raw)
            _closed_own(counted.made)
            assert await client.hget("roomkit:p:roomkit-kept", "status") == "resolved"
        finally:
            for each in (raw, client, *sentinel.sentinels):
                await each.aclose()


@pytest.mark.parametrize("option", ["true", "false"])
async def test_a_url_asking_to_decode_replies_gives_a_store_that_reads_bytes(
    redis_server: RedisServer, raw: Redis, option: str
) -> None:
    """The store's client is its own: the option is dropped (redis-py decodes on any text)."""
    url = f"{redis_server.url}?decode_responses={option}"
    async with RedisStore(url, prefix=fresh_prefix()) as store:
        await _use_requests(store, raw)


class OwnPool(ConnectionPool):
    """A pool of the application's own kind, which a store cannot know how to rebuild."""


@pytest.mark.parametrize(
    "make",
    [
        lambda client: RedisStore(client=client),
        lambda client: RedisRoomStore(client=client),
    ],
    ids=["requests", "rooms"],
)
async def test_a_decoding_client_on_a_pool_the_store_cannot_rebuild_is_refused(
    redis_server: RedisServer, make: Callable[[Redis], object]
) -> None:
    client = Redis(connection_pool=OwnPool.from_url(redis_server.url, decode_responses=True))
    try:
        with pytest.raises(ValueError, match=r"OwnPool.*decode_responses=False"):
            make(client)
    finally:
        await client.aclose()
        await client.connection_pool.aclose()

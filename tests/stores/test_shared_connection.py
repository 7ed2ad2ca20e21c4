"""The room store and the request store a server URL names share one client or one pool."""

from __future__ import annotations

import os

import pytest
from tests.servers.postgres_server import PostgresServer
from tests.servers.redis_server import RedisServer
from tests.tools.human_input.stores.store_kit import make_request

from roomkit.core.exceptions import StoreClosedError
from roomkit.models.room import Room
from roomkit.stores import close_stores, open_url


async def _clients_on(server: RedisServer, database: int) -> int:
    """How many connections the server holds on ``database`` (from a client on another)."""
    from redis.asyncio import Redis

    watcher = Redis.from_url(server.url.removesuffix("/0") + "/0")
    try:
        listed = await watcher.client_list()
    finally:
        await watcher.aclose()
    return sum(1 for client in listed if int(client["db"]) == database)


async def test_redis_stores_from_one_url_use_one_connection(
    redis_server: RedisServer, redis_database: str
) -> None:
    """Used one after the other, both stores go through the one connection of one pool
    (two clients would hold two)."""
    requests, rooms = open_url(redis_database)
    database = int(redis_database.rsplit("/", 1)[1])
    try:
        await rooms.create_room(Room("room-1"))
        _, created = await requests.insert(make_request(pending_id="p1"))
        assert created
        assert await rooms.get_room("room-1") is not None
        assert await requests.fetch("p1") is not None
        assert await _clients_on(redis_server, database) == 1
    finally:
        await close_stores(requests, rooms)


async def test_a_redis_room_store_beside_a_request_store_takes_its_prefix(
    redis_database: str,
) -> None:
    from roomkit.stores.redis import RedisRoomStore, RedisStore

    requests = RedisStore(redis_database, prefix="shop")
    rooms = RedisRoomStore.beside(requests)
    elsewhere = RedisRoomStore(redis_database, prefix="shop")
    try:
        assert rooms.prefix == "shop"
        await rooms.create_room(Room("room-1"))
        assert await elsewhere.get_room("room-1") is not None
    finally:
        await close_stores(rooms, requests, elsewhere)
    with pytest.raises(TypeError, match="beside\\(\\) takes a RedisStore"):
        RedisRoomStore.beside(rooms)  # type: ignore[arg-type]


@pytest.fixture
async def postgres_url(postgres_server: PostgresServer) -> str:
    """A database of this test's own (the stores from a URL use the default schema)."""
    import psycopg

    database = f"shared{os.urandom(4).hex()}"
    async with await psycopg.AsyncConnection.connect(postgres_server.dsn, autocommit=True) as db:
        await db.execute(f'CREATE DATABASE "{database}"')
    return postgres_server.dsn_for(database)


async def test_postgres_stores_from_one_url_share_the_request_stores_pool(
    postgres_url: str,
) -> None:
    """The room store works through the request store's pool: it creates its tables on it,
    and once the request store is closed, the room store is closed with it."""
    requests, rooms = open_url(postgres_url)
    try:
        await rooms.create_room(Room("room-1"))
        _, created = await requests.insert(make_request(pending_id="p1"))
        assert created
        assert await rooms.get_room("room-1") is not None
        await requests.close()
        with pytest.raises(StoreClosedError):
            await rooms.get_room("room-1")
        await requests.open()
        assert await rooms.get_room("room-1") is not None
    finally:
        await close_stores(requests, rooms)


async def test_closing_the_postgres_room_store_leaves_the_request_stores_pool_open(
    postgres_url: str,
) -> None:
    requests, rooms = open_url(postgres_url)
    try:
        await rooms.create_room(Room("room-1"))
        await rooms.close()
        _, created = await requests.insert(make_request(pending_id="p1"))
        assert created
        assert await rooms.get_room("room-1") is not None
    finally:
        await close_stores(requests, rooms)


def test_a_postgres_room_store_beside_takes_only_a_postgres_store() -> None:
    from roomkit.stores.postgres import PostgresRoomStore

    with pytest.raises(TypeError, match="beside\\(\\) takes a PostgresStore"):
        PostgresRoomStore.beside(object())  # type: ignore[arg-type]

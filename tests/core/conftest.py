"""Fixtures for the room stores: one redis-server for the session, a place per test.

Each test gets its own key prefix on the shared server, so tests never see each other's
rooms; a test that stops or restarts a server starts one of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from tests.core.room_stores import DURABLE, DurableRoomStore, Place
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix as fresh_prefix


@pytest.fixture(params=DURABLE)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """A deployment's data on each durable store: a SQLite file, or a Redis prefix."""
    if request.param == "sqlite":
        return Place.sqlite(tmp_path / "kit.db")
    if request.param == "postgres":
        dsn = request.getfixturevalue("postgres_server").dsn
        return Place.postgres(dsn, request.getfixturevalue("postgres_schema"))
    server: RedisServer = request.getfixturevalue("redis_server")
    return Place.redis(server.url, fresh_prefix())


OpenRooms = Callable[[], DurableRoomStore]


@pytest.fixture
async def open_rooms(place: Place) -> AsyncIterator[OpenRooms]:
    """Makes room-store objects on the test's place (each closed at the end), as separate
    processes of one deployment would have."""
    made: list[DurableRoomStore] = []

    def make() -> DurableRoomStore:
        store = place.rooms()
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


@pytest.fixture
async def durable_store(open_rooms: OpenRooms) -> DurableRoomStore:
    """An opened room store on each durable back end (closed by ``open_rooms``)."""
    store = open_rooms()
    await store.open()
    return store

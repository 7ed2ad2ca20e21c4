"""A PostgreSQL room store opened beside a request store (``beside``, or through
``roomkit.stores.open_url``) whose own tables cannot be made leaves nothing running: an
opening that fails closes what it started, the request store's pool included when the room
store's opening was what opened it."""

from __future__ import annotations

import os

import psycopg
import pytest
from tests.stores.postgres_roles import sessions

from roomkit.core.exceptions import StoreFormatError
from roomkit.core.store import RoomStore
from roomkit.stores import close_stores, open_url
from roomkit.stores.postgres import PostgresRoomStore, PostgresStore


async def _newer_rooms(database: str) -> None:
    """Room tables made by a newer roomkit, which this one refuses to open."""
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        await admin.execute("CREATE TABLE roomkit_rooms_schema (version integer NOT NULL)")
        await admin.execute("INSERT INTO roomkit_rooms_schema (version) VALUES (99)")


async def _entered(rooms: RoomStore) -> None:
    async with rooms:
        pytest.fail("the room store opened")


@pytest.mark.parametrize("way", ["async with", "first call"])
async def test_a_room_store_from_a_url_that_fails_to_open_closes_the_pool(
    way: str, database: str
) -> None:
    await _newer_rooms(database)
    name = f"roomkit-rooms-{os.urandom(4).hex()}"
    requests, rooms = open_url(f"{database}?application_name={name}")
    try:
        attempt = _entered(rooms) if way == "async with" else rooms.get_room("room-1")
        with pytest.raises(StoreFormatError):
            await attempt
        assert await sessions(database, name) == 0
    finally:
        await close_stores(requests, rooms)


async def test_a_failed_room_store_leaves_an_open_request_store_open(database: str) -> None:
    """The request store opened first keeps its pool: the room store did not open it."""
    await _newer_rooms(database)
    async with PostgresStore(database) as requests:
        rooms = PostgresRoomStore.beside(requests)
        with pytest.raises(StoreFormatError):
            await rooms.open()
        assert await requests.list_pending() == []
        await rooms.close()

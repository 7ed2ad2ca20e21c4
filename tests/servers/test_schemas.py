"""A schema a state machine's examples share is emptied whole between them, whatever rows
its tables hold."""

from __future__ import annotations

import psycopg
from tests.servers.postgres_server import PostgresServer
from tests.servers.schemas import emptied

from roomkit.models.room import Participant, Room
from roomkit.stores.postgres import PostgresRoomStore


async def test_rows_that_others_reference_are_emptied_with_them(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    """A room and the roster rows referencing it go together (a foreign key between them)."""
    dsn = postgres_server.dsn
    rooms = PostgresRoomStore(dsn, schema=postgres_schema)
    try:
        await rooms.open()
        await rooms.create_room(Room("r1"))
        await rooms.add_participant(Participant("alice", "r1"))
    finally:
        await rooms.close()

    assert await emptied(dsn, postgres_schema) == postgres_schema

    with psycopg.connect(dsn) as db:
        counts = [
            db.execute(f'SELECT count(*) FROM "{postgres_schema}"."{table}"').fetchone()
            for table in ("roomkit_rooms", "roomkit_participants")
        ]
    assert counts == [(0,), (0,)]

"""How :class:`~roomkit.stores.postgres._rooms.PostgresRoomStore` lays rooms and turns out.

The tables, their version, and the statements the store runs; rows convert to model objects
as the SQLite room store's do (:mod:`roomkit.stores._sql_rows`: JSON text for metadata,
ISO-8601 text for times), since their columns come in the same order. Every table is
prefixed ``roomkit_`` and qualified with the store's PostgreSQL schema, so that the schema
can also hold a pending-request store's tables. Each table listed in arrival order has a
``bigserial`` ``seq``.
"""

from __future__ import annotations

from roomkit.stores.postgres._migrate import version_table

__all__ = ["VERSION", "RoomStatements"]

VERSION = 1
"""The version of the room tables this code reads and writes."""


class RoomStatements:
    """Every statement of a room store whose tables live in ``schema`` (a checked name)."""

    def __init__(self, schema: str) -> None:
        s = f'"{schema}"'
        rooms, people, bindings = (
            f"{s}.roomkit_rooms",
            f"{s}.roomkit_participants",
            (f"{s}.roomkit_bindings"),
        )
        events, turns, steps = (
            f"{s}.roomkit_events",
            f"{s}.roomkit_turns",
            (f"{s}.roomkit_turn_steps"),
        )
        self.schema = schema
        self.lock = f"roomkit rooms {schema}"
        self.prepare, self.read_version, self.write_version = version_table(
            schema, "roomkit_rooms_schema"
        )
        # The node numbers processes take for their event ids (roomkit.models.event_ids):
        # made when missing, outside the versions, so that tables of version 1 gain it and an
        # earlier roomkit still opens them.
        event_nodes = f"{s}.roomkit_event_nodes"
        self.prepare.append(f"CREATE SEQUENCE IF NOT EXISTS {event_nodes}")
        self.migrations: dict[int, list[str]] = {
            1: [
                f"CREATE TABLE {rooms} (seq bigserial PRIMARY KEY, room_id text NOT NULL UNIQUE,"
                " metadata text NOT NULL, created_at text NOT NULL)",
                f"CREATE TABLE {people} (seq bigserial PRIMARY KEY,"
                f" room_id text NOT NULL REFERENCES {rooms} (room_id),"
                " participant_id text NOT NULL, name text, joined_at text NOT NULL,"
                " UNIQUE (room_id, participant_id))",
                f"CREATE TABLE {bindings} (seq bigserial PRIMARY KEY,"
                f" room_id text NOT NULL REFERENCES {rooms} (room_id),"
                " channel_id text NOT NULL, category text, metadata text NOT NULL,"
                " UNIQUE (room_id, channel_id))",
                f"CREATE INDEX roomkit_bindings_channel ON {bindings} (channel_id)",
                f"CREATE TABLE {events} (seq bigserial PRIMARY KEY,"
                f" room_id text NOT NULL REFERENCES {rooms} (room_id),"
                " event_id bigint NOT NULL, channel_id text NOT NULL, sender_id text NOT NULL,"
                " body text NOT NULL, language text, created_at text NOT NULL,"
                " metadata text NOT NULL)",
                f"CREATE INDEX roomkit_events_room ON {events} (room_id, seq)",
                f"CREATE INDEX roomkit_events_id ON {events} (event_id)",
                f"CREATE TABLE {turns} (seq bigserial PRIMARY KEY, turn_id text NOT NULL UNIQUE,"
                " room_id text NOT NULL, channel_id text NOT NULL, actor_id text,"
                " state text NOT NULL)",
                f"CREATE TABLE {steps} ("
                f" turn_id text NOT NULL REFERENCES {turns} (turn_id) ON DELETE CASCADE,"
                " idx integer NOT NULL, kind text NOT NULL, payload text NOT NULL,"
                " PRIMARY KEY (turn_id, idx))",
            ],
        }
        """The statements that bring the tables from one version below each key to it."""

        self.last_event_id = f"SELECT COALESCE(max(event_id), 0) FROM {events}"
        self.take_event_node = f"SELECT nextval('{event_nodes}')"
        self.insert_room = (
            f"INSERT INTO {rooms} (room_id, metadata, created_at) VALUES (%s, %s, %s)"
        )
        self.get_room = f"SELECT room_id, metadata, created_at FROM {rooms} WHERE room_id = %s"
        self.insert_participant = (
            f"INSERT INTO {people} (room_id, participant_id, name, joined_at)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (room_id, participant_id) DO NOTHING"
        )
        self.list_participants = (
            f"SELECT participant_id, room_id, name, joined_at FROM {people}"
            " WHERE room_id = %s ORDER BY seq"
        )
        self.upsert_binding = (
            f"INSERT INTO {bindings} AS b (room_id, channel_id, category, metadata)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (room_id, channel_id)"
            " DO UPDATE SET category = excluded.category, metadata = excluded.metadata"
        )
        self.delete_binding = (
            f"DELETE FROM {bindings} WHERE room_id = %s AND channel_id = %s RETURNING channel_id"
        )
        self.list_bindings = (
            f"SELECT room_id, channel_id, category, metadata FROM {bindings}"
            " WHERE room_id = %s ORDER BY seq"
        )
        self.rooms_for_channel = (
            f"SELECT b.room_id FROM {bindings} AS b JOIN {rooms} AS r ON r.room_id = b.room_id"
            " WHERE b.channel_id = %s ORDER BY r.seq"
        )
        columns = "event_id, room_id, channel_id, sender_id, body, language, created_at, metadata"
        self.insert_event = (
            f"INSERT INTO {events} ({columns}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        )
        self.list_events = (
            f"SELECT {columns} FROM {events} WHERE room_id = %s ORDER BY seq LIMIT %s OFFSET %s"
        )
        self.recent_events = (
            f"SELECT {columns} FROM {events} WHERE room_id = %s ORDER BY seq DESC LIMIT %s"
        )
        self.upsert_turn = (
            f"INSERT INTO {turns} (turn_id, room_id, channel_id, actor_id, state)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (turn_id) DO UPDATE SET"
            " room_id = excluded.room_id, channel_id = excluded.channel_id,"
            " actor_id = excluded.actor_id, state = excluded.state"
        )
        self.upsert_step = (
            f"INSERT INTO {steps} (turn_id, idx, kind, payload) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (turn_id, idx) DO UPDATE SET kind = excluded.kind,"
            " payload = excluded.payload"
        )
        self.list_steps = f"SELECT idx, kind, payload FROM {steps} WHERE turn_id = %s ORDER BY idx"
        self.renew_turn = f"UPDATE {turns} SET state = %s WHERE turn_id = %s RETURNING turn_id"
        self.renew_turns: str | None = (
            f"UPDATE {turns} AS turn SET state = renewed.state"
            " FROM unnest(%s::text[], %s::text[]) AS renewed(turn_id, state)"
            " WHERE turn.turn_id = renewed.turn_id RETURNING turn.turn_id"
        )
        self.delete_turn = f"DELETE FROM {turns} WHERE turn_id = %s RETURNING turn_id"
        self.open_turns = (
            f"SELECT turn_id, room_id, channel_id, actor_id, state FROM {turns} ORDER BY seq"
        )

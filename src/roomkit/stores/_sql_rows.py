"""How :class:`~roomkit.stores.sqlite._rooms.SQLiteRoomStore` lays rooms and turns out in SQLite.

The schema, the statements the store runs, and the conversions between rows and the model
objects live here. Every table is prefixed ``roomkit_`` so the file can also hold a pending-
request store's tables. Metadata, journal payloads and turn state are JSON text; datetimes are
ISO-8601 text, so a value read back equals the one written.

Each table that lists rows in the order they arrived has an ``INTEGER PRIMARY KEY`` ``seq``:
SQLite gives a new row a ``seq`` above every row present, so insertion order survives restarts
and holds across the processes sharing the file.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent, TextContent
from roomkit.stores._json_fields import dump_json, load_object

TABLES = (
    "roomkit_rooms",
    "roomkit_participants",
    "roomkit_bindings",
    "roomkit_events",
    "roomkit_turns",
    "roomkit_turn_steps",
    "roomkit_event_nodes",
)
"""The tables the store owns."""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS roomkit_rooms (
        seq INTEGER PRIMARY KEY,
        room_id TEXT NOT NULL UNIQUE,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS roomkit_participants (
        seq INTEGER PRIMARY KEY,
        room_id TEXT NOT NULL REFERENCES roomkit_rooms (room_id),
        participant_id TEXT NOT NULL,
        name TEXT,
        joined_at TEXT NOT NULL,
        UNIQUE (room_id, participant_id)
    )""",
    """CREATE TABLE IF NOT EXISTS roomkit_bindings (
        seq INTEGER PRIMARY KEY,
        room_id TEXT NOT NULL REFERENCES roomkit_rooms (room_id),
        channel_id TEXT NOT NULL,
        category TEXT,
        metadata TEXT NOT NULL,
        UNIQUE (room_id, channel_id)
    )""",
    "CREATE INDEX IF NOT EXISTS roomkit_bindings_channel ON roomkit_bindings (channel_id)",
    """CREATE TABLE IF NOT EXISTS roomkit_events (
        seq INTEGER PRIMARY KEY,
        room_id TEXT NOT NULL REFERENCES roomkit_rooms (room_id),
        event_id INTEGER NOT NULL,
        channel_id TEXT NOT NULL,
        sender_id TEXT NOT NULL,
        body TEXT NOT NULL,
        language TEXT,
        created_at TEXT NOT NULL,
        metadata TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS roomkit_events_room ON roomkit_events (room_id, seq)",
    "CREATE INDEX IF NOT EXISTS roomkit_events_id ON roomkit_events (event_id)",
    """CREATE TABLE IF NOT EXISTS roomkit_turns (
        seq INTEGER PRIMARY KEY,
        turn_id TEXT NOT NULL UNIQUE,
        room_id TEXT NOT NULL,
        channel_id TEXT NOT NULL,
        actor_id TEXT,
        state TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS roomkit_turn_steps (
        turn_id TEXT NOT NULL REFERENCES roomkit_turns (turn_id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        PRIMARY KEY (turn_id, idx)
    ) WITHOUT ROWID""",
    # One row: the last node number a process opening the file took for its event ids
    # (roomkit.models.event_ids). A file made before it gains it at its next opening.
    """CREATE TABLE IF NOT EXISTS roomkit_event_nodes (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        taken INTEGER NOT NULL
    )""",
)
"""The statements that create the tables and indexes, each harmless when already applied."""

COUNT_TABLES = (
    "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
    f" AND name IN ({', '.join('?' * len(TABLES))})"
)
LAST_EVENT_ID = "SELECT max(event_id) FROM roomkit_events"
TAKE_EVENT_NODE = (
    "INSERT INTO roomkit_event_nodes (one, taken) VALUES (1, 1)"
    " ON CONFLICT (one) DO UPDATE SET taken = taken + 1 RETURNING taken"
)
"""Takes the next node number for this process's event ids (one atomic write)."""

INSERT_ROOM = "INSERT INTO roomkit_rooms (room_id, metadata, created_at) VALUES (?, ?, ?)"
GET_ROOM = "SELECT room_id, metadata, created_at FROM roomkit_rooms WHERE room_id = ?"
INSERT_PARTICIPANT = (
    "INSERT INTO roomkit_participants (room_id, participant_id, name, joined_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (room_id, participant_id) DO NOTHING"
)
LIST_PARTICIPANTS = (
    "SELECT participant_id, room_id, name, joined_at FROM roomkit_participants"
    " WHERE room_id = ? ORDER BY seq"
)
UPSERT_BINDING = (
    "INSERT INTO roomkit_bindings (room_id, channel_id, category, metadata) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (room_id, channel_id)"
    " DO UPDATE SET category = excluded.category, metadata = excluded.metadata"
)
DELETE_BINDING = (
    "DELETE FROM roomkit_bindings WHERE room_id = ? AND channel_id = ? RETURNING channel_id"
)
LIST_BINDINGS = (
    "SELECT room_id, channel_id, category, metadata FROM roomkit_bindings"
    " WHERE room_id = ? ORDER BY seq"
)
ROOMS_FOR_CHANNEL = (
    "SELECT b.room_id FROM roomkit_bindings AS b"
    " JOIN roomkit_rooms AS r ON r.room_id = b.room_id"
    " WHERE b.channel_id = ? ORDER BY r.seq"
)
_EVENT_COLUMNS = "event_id, room_id, channel_id, sender_id, body, language, created_at, metadata"
INSERT_EVENT = f"INSERT INTO roomkit_events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
LIST_EVENTS = (
    f"SELECT {_EVENT_COLUMNS} FROM roomkit_events WHERE room_id = ? ORDER BY seq LIMIT ? OFFSET ?"
)
RECENT_EVENTS = (
    f"SELECT {_EVENT_COLUMNS} FROM roomkit_events WHERE room_id = ? ORDER BY seq DESC LIMIT ?"
)
"""The room's last events, newest first."""

UPSERT_TURN = (
    "INSERT INTO roomkit_turns (turn_id, room_id, channel_id, actor_id, state)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (turn_id) DO UPDATE SET room_id = excluded.room_id,"
    " channel_id = excluded.channel_id, actor_id = excluded.actor_id, state = excluded.state"
)
UPSERT_STEP = (
    "INSERT INTO roomkit_turn_steps (turn_id, idx, kind, payload) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (turn_id, idx) DO UPDATE SET kind = excluded.kind, payload = excluded.payload"
)
LIST_STEPS = "SELECT idx, kind, payload FROM roomkit_turn_steps WHERE turn_id = ? ORDER BY idx"
RENEW_TURN = "UPDATE roomkit_turns SET state = ? WHERE turn_id = ? RETURNING turn_id"
"""Replaces an open turn's state (its lease); the row comes back when the turn was open."""
DELETE_TURN = "DELETE FROM roomkit_turns WHERE turn_id = ? RETURNING turn_id"
"""Ends a turn (its steps go with it); the row comes back when the turn was open."""
OPEN_TURNS = "SELECT turn_id, room_id, channel_id, actor_id, state FROM roomkit_turns ORDER BY seq"


class _Statements:
    """The statements of :class:`~roomkit.stores._sql_rooms.SQLRooms`, in SQLite's dialect."""

    insert_room = INSERT_ROOM
    get_room = GET_ROOM
    insert_participant = INSERT_PARTICIPANT
    list_participants = LIST_PARTICIPANTS
    upsert_binding = UPSERT_BINDING
    delete_binding = DELETE_BINDING
    list_bindings = LIST_BINDINGS
    rooms_for_channel = ROOMS_FOR_CHANNEL
    insert_event = INSERT_EVENT
    list_events = LIST_EVENTS
    recent_events = RECENT_EVENTS
    upsert_turn = UPSERT_TURN
    upsert_step = UPSERT_STEP
    list_steps = LIST_STEPS
    renew_turn = RENEW_TURN
    renew_turns: str | None = None
    delete_turn = DELETE_TURN
    open_turns = OPEN_TURNS


STATEMENTS = _Statements()
"""The SQLite room store's statements by name."""

Row = Any
"""A row as the driver returns it (a tuple, in the statement's column order)."""


def dump(value: dict[str, Any], what: str) -> str:
    """``value`` as JSON text.

    Raises:
        TypeError: ``value`` holds something JSON cannot represent; ``what`` names it.
    """
    return dump_json(value, what, backend="SQLite")


def _moment(text: str, where: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError) as error:
        raise CorruptRecordError(f"{where} holds an unreadable timestamp ({error})") from None


def room_params(room: Room) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT_ROOM` for ``room``."""
    return (room.id, dump(room.metadata, "Room metadata"), room.created_at.isoformat())


def room_from(row: Row) -> Room:
    """The room a :data:`GET_ROOM` row holds."""
    where = f"room {row[0]!r}"
    return Room(row[0], load_object(row[1], where), _moment(row[2], where))


def participant_params(participant: Participant) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT_PARTICIPANT`."""
    return (
        participant.room_id,
        participant.id,
        participant.name,
        participant.joined_at.isoformat(),
    )


def participant_from(row: Row) -> Participant:
    """The participant a :data:`LIST_PARTICIPANTS` row holds."""
    return Participant(row[0], row[1], row[2], _moment(row[3], f"participant {row[0]!r}"))


# A binding's group rides in its metadata column under this key, so files written before
# bindings had a group read back unchanged and need no new column.
_GROUP_KEY = "roomkit:group"


def binding_params(binding: ChannelBinding) -> tuple[Any, ...]:
    """The parameters of :data:`UPSERT_BINDING`."""
    stored = binding.metadata
    if binding.group is not None:
        stored = {**stored, _GROUP_KEY: binding.group}
    metadata = dump(stored, "Binding metadata")
    return (binding.room_id, binding.channel_id, binding.category, metadata)


def binding_from(row: Row) -> ChannelBinding:
    """The binding a :data:`LIST_BINDINGS` row holds."""
    metadata = load_object(row[3], f"binding of {row[1]!r}")
    group = metadata.pop(_GROUP_KEY, None)
    if group is not None and not isinstance(group, str):
        raise CorruptRecordError(f"binding of {row[1]!r} holds a group that is not a string")
    return ChannelBinding(row[0], row[1], row[2], metadata, group)


def event_params(event: RoomEvent) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT_EVENT`; the event keeps its own id."""
    return (
        event.id,
        event.room_id,
        event.channel_id,
        event.sender_id,
        event.content.body,
        event.content.language,
        event.created_at.isoformat(),
        dump(event.metadata, "Event metadata"),
    )


def event_from(row: Row) -> RoomEvent:
    """The event a :data:`LIST_EVENTS` or :data:`RECENT_EVENTS` row holds."""
    where = f"event {row[0]!r}"
    return RoomEvent(
        room_id=row[1],
        channel_id=row[2],
        sender_id=row[3],
        content=TextContent(row[4], row[5]),
        id=row[0],
        created_at=_moment(row[6], where),
        metadata=load_object(row[7], where),
    )


def turn_params(turn: OpenTurn) -> tuple[Any, ...]:
    """The parameters of :data:`UPSERT_TURN`."""
    state = dump(turn.state, "Turn state")
    return (turn.turn_id, turn.room_id, turn.channel_id, turn.actor_id, state)


def renew_params(turn: OpenTurn) -> tuple[Any, ...]:
    """The parameters of :data:`RENEW_TURN`."""
    return (dump(turn.state, "Turn state"), turn.turn_id)


def turn_from(row: Row) -> OpenTurn:
    """The turn an :data:`OPEN_TURNS` row holds."""
    return OpenTurn(row[0], row[1], row[2], row[3], load_object(row[4], f"turn {row[0]!r}"))


def step_params(turn_id: str, step: JournalStep) -> tuple[Any, ...]:
    """The parameters of :data:`UPSERT_STEP`."""
    return (turn_id, step.index, step.kind, dump(step.payload, "Journal step payload"))


def step_from(row: Row, turn_id: str) -> JournalStep:
    """The step a :data:`LIST_STEPS` row of ``turn_id`` holds."""
    return JournalStep(row[0], row[1], load_object(row[2], f"step {row[0]} of turn {turn_id!r}"))

"""How :class:`~roomkit.stores.redis._rooms.RedisRoomStore` lays rooms and turns out on Redis.

The key layout, the Lua scripts the store runs and the conversions between stored JSON and
the model objects live here. Every key starts with ``<prefix>:rooms:``, apart from the
pending-request store's keys under the same prefix::

    <p>:rooms:format              the format version of everything below
    <p>:rooms:seq                 a counter: the order of rooms, rosters, bindings and turns
    <p>:rooms:last-event          the largest event id stored
    <p>:rooms:all                 zset: room id -> its place among the rooms
    <p>:rooms:room:<room>         the room (JSON)
    <p>:rooms:roster:<room>       hash: participant id -> participant (JSON)
    <p>:rooms:roster-order:<room> zset: participant id -> join order
    <p>:rooms:bindings:<room>     hash: channel id -> binding (JSON)
    <p>:rooms:binding-order:<room> zset: channel id -> when first attached
    <p>:rooms:channel:<channel>   zset: room id -> the room's place (the rooms it is bound to)
    <p>:rooms:events:<room>       list: the room's events (JSON), oldest first
    <p>:rooms:turns               zset: open turn id -> when first begun
    <p>:rooms:turn:<turn>         the open turn (JSON)
    <p>:rooms:steps:<turn>        hash: step index -> step (JSON)

Every write is one script, so each is atomic on the server, and each checks the format key
first: a store holding another format version refuses the write and changes nothing. Values
are JSON text written by Python; the scripts store and return them as they are, never
re-encoding them, so a value read back equals the one written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent, TextContent
from roomkit.stores._json_fields import dump_json, load_object

__all__ = [
    "FORMAT",
    "Layout",
    "decode_binding",
    "decode_event",
    "decode_participant",
    "decode_room",
    "decode_step",
    "decode_turn",
    "encode_binding",
    "encode_event",
    "encode_participant",
    "encode_room",
    "encode_step",
    "encode_turn",
]

FORMAT = "roomkit.rooms.v1"
"""The format version this module reads and writes."""


class Layout:
    """The keys a store with ``prefix`` uses, as the layout above draws them."""

    __slots__ = ("all", "base", "format", "last_event", "seq", "turns")

    def __init__(self, prefix: str) -> None:
        self.base = f"{prefix}:rooms:"
        """What every key of the store starts with."""
        self.format = self.base + "format"
        self.seq = self.base + "seq"
        self.last_event = self.base + "last-event"
        self.all = self.base + "all"
        self.turns = self.base + "turns"

    def room(self, room_id: str) -> str:
        return f"{self.base}room:{room_id}"

    def roster(self, room_id: str) -> tuple[str, str]:
        """The roster's records and their order."""
        return f"{self.base}roster:{room_id}", f"{self.base}roster-order:{room_id}"

    def bindings(self, room_id: str) -> tuple[str, str]:
        """The room's bindings and their order."""
        return f"{self.base}bindings:{room_id}", f"{self.base}binding-order:{room_id}"

    def channel(self, channel_id: str) -> str:
        return f"{self.base}channel:{channel_id}"

    def events(self, room_id: str) -> str:
        return f"{self.base}events:{room_id}"

    def turn(self, turn_id: str) -> str:
        return f"{self.base}turn:{turn_id}"

    def steps(self, turn_id: str) -> str:
        return f"{self.base}steps:{turn_id}"


# -- scripts ------------------------------------------------------------------------------------
# Every write script takes the format key as KEYS[1] and the format as ARGV[1], and answers a
# table whose first element says what happened: "ok", "format" (with the stored format),
# "exists", "noroom" or "noturn".

_FORMAT_CHECK = """
local stored = redis.call('GET', KEYS[1])
if stored and stored ~= ARGV[1] then return {'format', stored} end
if not stored then redis.call('SET', KEYS[1], ARGV[1]) end
"""

_APPEND_EVENT = """
local function append_event(events, last_key, id, event)
  redis.call('RPUSH', events, event)
  if tonumber(id) > tonumber(redis.call('GET', last_key) or '0') then
    redis.call('SET', last_key, id)
  end
end
"""

_UPSERT_TURN = """
local function upsert_turn(turns, seq, key, turn_id, turn)
  redis.call('SET', key, turn)
  if not redis.call('ZSCORE', turns, turn_id) then
    redis.call('ZADD', turns, redis.call('INCR', seq), turn_id)
  end
end
"""

OPEN = (
    """
-- KEYS: format, last-event. ARGV: format. Claims an empty store for this format.
"""
    + _FORMAT_CHECK
    + """
return {'ok', redis.call('GET', KEYS[2]) or '0'}
"""
)

CREATE_ROOM = (
    """
-- KEYS: format, all, seq, room. ARGV: format, room id, room.
"""
    + _FORMAT_CHECK
    + """
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'exists'} end
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[2])
redis.call('SET', KEYS[4], ARGV[3])
return {'ok'}
"""
)

ADD_PARTICIPANT = (
    """
-- KEYS: format, all, seq, roster, roster order. ARGV: format, room id, participant id, record.
"""
    + _FORMAT_CHECK
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noroom'} end
if redis.call('HSETNX', KEYS[4], ARGV[3], ARGV[4]) == 1 then
  redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[3]), ARGV[3])
end
return {'ok'}
"""
)

ADD_BINDING = (
    """
-- KEYS: format, all, seq, bindings, binding order, channel.
-- ARGV: format, room id, channel id, binding.
"""
    + _FORMAT_CHECK
    + """
local place = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not place then return {'noroom'} end
redis.call('HSET', KEYS[4], ARGV[3], ARGV[4])
if not redis.call('ZSCORE', KEYS[5], ARGV[3]) then
  redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[3]), ARGV[3])
end
redis.call('ZADD', KEYS[6], place, ARGV[2])
return {'ok'}
"""
)

REMOVE_BINDING = (
    """
-- KEYS: format, bindings, binding order, channel. ARGV: format, room id, channel id.
"""
    + _FORMAT_CHECK
    + """
if redis.call('HDEL', KEYS[2], ARGV[3]) == 0 then return {'ok', 0} end
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('ZREM', KEYS[4], ARGV[2])
return {'ok', 1}
"""
)

ADD_EVENT = (
    """
-- KEYS: format, all, events, last-event. ARGV: format, room id, event id, event.
"""
    + _FORMAT_CHECK
    + _APPEND_EVENT
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noroom'} end
append_event(KEYS[3], KEYS[4], ARGV[3], ARGV[4])
return {'ok'}
"""
)

RECORD_INBOUND = (
    """
-- KEYS: format, all, events, last-event, turns, seq, then one key per turn.
-- ARGV: format, room id, event id, event, then a turn id and a turn per turn.
"""
    + _FORMAT_CHECK
    + _APPEND_EVENT
    + _UPSERT_TURN
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noroom'} end
append_event(KEYS[3], KEYS[4], ARGV[3], ARGV[4])
for n = 7, #KEYS do
  upsert_turn(KEYS[5], KEYS[6], KEYS[n], ARGV[2 * n - 9], ARGV[2 * n - 8])
end
return {'ok'}
"""
)

BEGIN_TURN = (
    """
-- KEYS: format, turns, seq, turn. ARGV: format, turn id, turn.
"""
    + _FORMAT_CHECK
    + _UPSERT_TURN
    + """
upsert_turn(KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3])
return {'ok'}
"""
)

RECORD_STEP = (
    """
-- KEYS: format, turns, steps. ARGV: format, turn id, index, step.
"""
    + _FORMAT_CHECK
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noturn'} end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
return {'ok'}
"""
)

FINISH_TURN = (
    """
-- KEYS: format, turns, turn, steps, and with a reply: all, events, last-event.
-- ARGV: format, turn id, and with a reply: room id, event id, event.
"""
    + _FORMAT_CHECK
    + _APPEND_EVENT
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'ok', 0} end
if #KEYS > 4 and not redis.call('ZSCORE', KEYS[5], ARGV[3]) then return {'noroom'} end
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[3], KEYS[4])
if #KEYS > 4 then append_event(KEYS[6], KEYS[7], ARGV[4], ARGV[5]) end
return {'ok', 1}
"""
)

END_TURN = (
    """
-- KEYS: format, turns, turn, steps. ARGV: format, turn id.
"""
    + _FORMAT_CHECK
    + """
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[3], KEYS[4])
return {'ok'}
"""
)

READ_ORDERED = """
-- KEYS: an order zset, the hash it orders. The hash's values in that order, in one read.
local values = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local value = redis.call('HGET', KEYS[2], member)
  if value then values[#values + 1] = value end
end
return values
"""

READ_TURNS = """
-- KEYS: turns. ARGV: what each turn's key starts with. The open turns, oldest first.
local values = {}
for _, turn_id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local value = redis.call('GET', ARGV[1] .. turn_id)
  if value then values[#values + 1] = value end
end
return values
"""


# -- records ------------------------------------------------------------------------------------


def _dump(value: dict[str, Any], what: str) -> str:
    return dump_json(value, what, backend="Redis")


def _dump_attributes(value: object, names: tuple[str, ...], what: str) -> str:
    """``value``'s attributes ``names``, as one JSON object (``what`` names it in errors)."""
    return _dump({name: getattr(value, name) for name in names}, what)


def _field(
    record: dict[str, Any], name: str, kind: type, where: str, *, optional: bool = False
) -> Any:
    """``record[name]`` when it is a ``kind`` (or, if ``optional``, missing or null)."""
    value = record.get(name)
    if value is None and optional:
        return None
    # JSON's true and false read back as bools, which Python also counts as ints.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise CorruptRecordError(f"{where} holds no {kind.__name__} {name!r}")
    return value


def _moment(record: dict[str, Any], name: str, where: str) -> datetime:
    try:
        return datetime.fromisoformat(_field(record, name, str, where))
    except ValueError as error:
        raise CorruptRecordError(f"{where} holds an unreadable timestamp ({error})") from None


# Only the metadata, state and payloads can hold what JSON cannot: the errors name them.


def encode_room(room: Room) -> str:
    record = {"created_at": room.created_at.isoformat(), "metadata": room.metadata}
    return _dump(record, "Room metadata")


def decode_room(raw: bytes | str, room_id: str) -> Room:
    where = f"room {room_id!r}"
    record = load_object(raw, where)
    metadata = _field(record, "metadata", dict, where)
    return Room(room_id, metadata, _moment(record, "created_at", where))


def encode_participant(participant: Participant) -> str:
    record = {
        "id": participant.id,
        "name": participant.name,
        "joined_at": participant.joined_at.isoformat(),
    }
    return _dump(record, "Participant name")


def decode_participant(raw: bytes | str, room_id: str) -> Participant:
    where = f"a participant of room {room_id!r}"
    record = load_object(raw, where)
    return Participant(
        _field(record, "id", str, where),
        room_id,
        _field(record, "name", str, where, optional=True),
        _moment(record, "joined_at", where),
    )


def encode_binding(binding: ChannelBinding) -> str:
    names = ("channel_id", "category", "group", "metadata")
    return _dump_attributes(binding, names, "Binding metadata")


def decode_binding(raw: bytes | str, room_id: str) -> ChannelBinding:
    where = f"a binding of room {room_id!r}"
    record = load_object(raw, where)
    group = record.get("group")
    if group is not None and not isinstance(group, str):
        raise CorruptRecordError(f"{where} holds a group that is not a string")
    return ChannelBinding(
        room_id,
        _field(record, "channel_id", str, where),
        _field(record, "category", str, where, optional=True),
        _field(record, "metadata", dict, where),
        group,
    )


def encode_event(event: RoomEvent) -> str:
    record = {
        "id": event.id,
        "channel_id": event.channel_id,
        "sender_id": event.sender_id,
        "body": event.content.body,
        "language": event.content.language,
        "created_at": event.created_at.isoformat(),
        "metadata": event.metadata,
    }
    return _dump(record, "Event metadata")


def decode_event(raw: bytes | str, room_id: str) -> RoomEvent:
    where = f"an event of room {room_id!r}"
    record = load_object(raw, where)
    content = TextContent(
        _field(record, "body", str, where), _field(record, "language", str, where, optional=True)
    )
    return RoomEvent(
        room_id=room_id,
        channel_id=_field(record, "channel_id", str, where),
        sender_id=_field(record, "sender_id", str, where),
        content=content,
        id=_field(record, "id", int, where),
        created_at=_moment(record, "created_at", where),
        metadata=_field(record, "metadata", dict, where),
    )


def encode_turn(turn: OpenTurn) -> str:
    names = ("turn_id", "room_id", "channel_id", "actor_id", "state")
    return _dump_attributes(turn, names, "Turn state")


def decode_turn(raw: bytes | str) -> OpenTurn:
    record = load_object(raw, "an open turn")
    where = f"turn {record.get('turn_id')!r}"
    return OpenTurn(
        _field(record, "turn_id", str, where),
        _field(record, "room_id", str, where),
        _field(record, "channel_id", str, where),
        _field(record, "actor_id", str, where, optional=True),
        _field(record, "state", dict, where),
    )


def encode_step(step: JournalStep) -> str:
    return _dump_attributes(step, ("kind", "payload"), "Journal step payload")


def decode_step(index: bytes | str, raw: bytes | str, turn_id: str) -> JournalStep:
    where = f"step {index!r} of turn {turn_id!r}"
    record = load_object(raw, where)
    try:
        position = int(index)
    except ValueError:
        raise CorruptRecordError(f"{where} has an index that is not a number") from None
    return JournalStep(
        position, _field(record, "kind", str, where), _field(record, "payload", dict, where)
    )

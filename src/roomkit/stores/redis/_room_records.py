"""How :class:`~roomkit.stores.redis._rooms.RedisRoomStore` lays rooms and turns out on Redis.

The key layout and the conversions between stored JSON and the model objects live here (the
Lua scripts the store runs, in :mod:`~roomkit.stores.redis._room_scripts`). Every key starts
with ``<prefix>:rooms:``, apart from the pending-request store's keys under the same prefix::

    <p>:rooms:format              the format version of everything below
    <p>:rooms:seq                 a counter: the order of rooms, rosters, bindings and turns
    <p>:rooms:last-event          the largest event id stored
    <p>:rooms:event-nodes         a counter: the last node number a process took for its
                                  event ids (roomkit.models.event_ids)
    <p>:rooms:all                 zset: room id -> its place among the rooms
    <p>:rooms:room:<room>         the room (JSON), with a token of the create that wrote it
    <p>:rooms:roster:<room>       hash: participant id -> participant (JSON)
    <p>:rooms:roster-order:<room> zset: participant id -> join order
    <p>:rooms:bindings:<room>     hash: channel id -> binding (JSON)
    <p>:rooms:binding-order:<room> zset: channel id -> when first attached
    <p>:rooms:channel:<channel>   zset: room id -> the room's place (the rooms it is bound to)
    <p>:rooms:events:<room>       list: the room's events (JSON), oldest first
    <p>:rooms:turns               zset: open turn id -> when first begun
    <p>:rooms:turn:<turn>         the open turn (JSON)
    <p>:rooms:steps:<turn>        hash: step index -> step (JSON)

An event's append (alone, with the turns it begins, or with the end of its turn), a
binding's removal and a turn's end also keep their reply a while under ``<p>:once:<token>``
(:mod:`~roomkit.stores.redis._once`), so that the client's re-send of them writes nothing
more.

Values are JSON text written by Python; the scripts store and return them as they are, never
re-encoding them, so a value read back equals the one written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent, TextContent
from roomkit.models.shown import shown
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

    __slots__ = ("all", "base", "event_nodes", "format", "last_event", "seq", "turns")

    def __init__(self, prefix: str) -> None:
        self.base = f"{prefix}:rooms:"
        """What every key of the store starts with."""
        self.format = self.base + "format"
        self.seq = self.base + "seq"
        self.last_event = self.base + "last-event"
        self.event_nodes = self.base + "event-nodes"
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


def encode_room(room: Room, call: str) -> str:
    """``room``'s record, holding ``call``, a token of the create that writes it: the
    client's re-send of that create finds the very record it would write, and says created."""
    record = {"created_at": room.created_at.isoformat(), "metadata": room.metadata, "call": call}
    return _dump(record, "Room metadata")


def decode_room(raw: bytes | str, room_id: str) -> Room:
    where = f"room {shown(room_id)}"
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
    where = f"a participant of room {shown(room_id)}"
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
    where = f"a binding of room {shown(room_id)}"
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
    where = f"an event of room {shown(room_id)}"
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

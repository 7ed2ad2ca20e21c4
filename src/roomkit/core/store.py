"""The kit's store of rooms, rosters, bindings and event history, in memory.

Also the contracts a room store fulfils: :class:`RoomStore` for every store, and
:class:`TurnJournal` for a durable one (SQLite, Redis), whose atomic writes let a process
killed at any instant lose neither a message's turn nor a turn's reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent
from roomkit.models.shown import shown

__all__ = [
    "InMemoryStore",
    "JournalStep",
    "OpenTurn",
    "RoomStore",
    "TurnJournal",
    "TurnLeases",
    "turn_journal",
]


class RoomStore(Protocol):
    """What the kit needs from a room store.

    A durable store (SQLite, Redis, PostgreSQL) may also raise
    :class:`~roomkit.core.exceptions.StoreUnavailableError` from any method when its database
    cannot be reached.
    """

    async def create_room(self, room: Room) -> None:
        """Store a new room.

        Raises:
            ValueError: a room with this id exists.
        """
        ...

    async def get_room(self, room_id: str) -> Room | None:
        """The room with this id, or ``None``."""
        ...

    async def add_participant(self, participant: Participant) -> None:
        """Add someone to a room's roster; the first record of a participant is kept.

        Raises:
            KeyError: no such room.
        """
        ...

    async def list_participants(self, room_id: str) -> list[Participant]:
        """The room's roster, in the order people joined."""
        ...

    async def add_binding(self, binding: ChannelBinding) -> None:
        """Attach a channel to a room; attaching it again replaces the binding.

        Raises:
            KeyError: no such room.
        """
        ...

    async def list_bindings(self, room_id: str) -> list[ChannelBinding]:
        """The room's bindings, in the order the channels were first attached."""
        ...

    async def remove_binding(self, room_id: str, channel_id: str) -> bool:
        """Detach a channel from a room; ``False`` when it was not attached."""
        ...

    async def rooms_for_channel(self, channel_id: str) -> list[str]:
        """The ids of the rooms the channel is attached to."""
        ...

    async def add_event(self, event: RoomEvent) -> None:
        """Append an event to its room's history.

        Raises:
            KeyError: no such room.
        """
        ...

    async def list_events(self, room_id: str, offset: int = 0, limit: int = 50) -> list[RoomEvent]:
        """The room's events, oldest first, from ``offset``, at most ``limit``."""
        ...

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        """The last ``limit`` events of the room, oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class OpenTurn:
    """A turn that started and has not finished: what ``resume_pending()`` re-drives."""

    turn_id: str
    """The turn's id (its human-input requests' keys derive from it)."""
    room_id: str
    """The room the turn runs in."""
    channel_id: str
    """The AI channel running the turn."""
    actor_id: str | None
    """The participant whose message started it, or ``None``."""
    state: dict[str, Any] = field(default_factory=dict)
    """What the channel keeps with the turn's record (JSON-ready). The records the kit
    makes with a message (``record_inbound``) hold ``{"message_id": <the event's id>}``, so
    a turn that waited for others reads its message last, and the door's name for the
    message when it gave one (``"message_name"``). What the turn did goes in steps."""


@dataclass(frozen=True, slots=True)
class JournalStep:
    """One recorded step of a turn: a model response, or a call's result."""

    index: int
    """The step's position in the turn, from 0."""
    kind: str
    """What was recorded (``"response"``, ``"result"``...), the channel's vocabulary."""
    payload: dict[str, Any]
    """The step, JSON-ready."""


@runtime_checkable
class TurnJournal(Protocol):
    """A durable room store's record of turns in flight, so a restart can finish them.

    The contract, in the order a turn meets it (each numbered write is atomic: after a
    crash, all of it is stored or none of it):

    1. ``record_inbound`` stores a message and begins the turns it starts, together: a
       message in the history always has its turns open until they finish. (A turn that
       answers no stored message is begun on its own with ``begin_turn``.)
    2. ``record_step`` records what the turn does as it happens: the conversation it
       starts from, each model response, each call's result. A step for a turn no longer
       open is refused (``TurnNotOpenError``), so a run that lost the race to finish a
       turn, or whose turn was ended elsewhere (``end_turn``), stops there.
    3. ``finish_turn`` stores the turn's reply and ends the turn, together: a finished
       turn always has its reply in the history, and a reply is stored once.

    After a restart, ``open_turns`` lists what to re-drive (a turn with no steps has not
    started) and ``steps`` replays what already happened, so the re-run makes no model
    call and runs no tool twice. A store on a server (Redis, PostgreSQL) implements each
    numbered write as one transaction (or one script).
    """

    async def record_inbound(self, event: RoomEvent, turns: Sequence[OpenTurn]) -> None:
        """Append ``event`` to its room's history and begin ``turns``, in one atomic write.

        Each turn is begun as :meth:`begin_turn` begins it.

        Raises:
            KeyError: the event's room does not exist (nothing is written).
        """

    async def begin_turn(self, turn: OpenTurn) -> None:
        """Record a turn as started (replaces a record with the same id)."""

    async def record_step(self, turn_id: str, step: JournalStep) -> None:
        """Record a step (a step with the same index is replaced).

        Raises:
            TurnNotOpenError: the turn was never begun, or has ended (also a ``KeyError``).
        """

    async def steps(self, turn_id: str) -> list[JournalStep]:
        """The turn's steps, by index."""

    async def finish_turn(self, turn_id: str, reply: RoomEvent | None) -> bool:
        """End the turn and append ``reply`` (if any) to its room, in one atomic write.

        Returns ``False``, writing nothing, when the turn is not open (never begun, or
        already finished): a reply is stored at most once, however often the turn ran.

        Raises:
            KeyError: the reply's room does not exist (nothing is written).
        """

    async def end_turn(self, turn_id: str) -> None:
        """Forget the turn and its steps without a reply; an unknown id is ignored."""

    async def open_turns(self) -> list[OpenTurn]:
        """The turns started and not finished, oldest first."""


@runtime_checkable
class TurnLeases(Protocol):
    """A turn journal that keeps, with each open turn, until when a process runs it.

    The kit writes the lease in the turn's state (``"lease_until"``, seconds since the
    epoch) when it begins the turn and renews it while the turn runs or waits to run, so
    another process tells a turn some process runs from one none does (its lease lapsed).
    """

    async def renew_turns(self, turns: Sequence[OpenTurn]) -> frozenset[str]:
        """Replace each open turn's state with its ``state`` here, in one atomic write
        whatever their number (the kit renews every turn it holds at once); the ids of the
        turns renewed. A turn not open (never begun, or ended) is left out, written nothing:
        a renewal never reopens a turn. No turns, no write.

        Raises:
            TypeError: a turn's state is not JSON-ready (nothing is written).
            StoreUnavailableError: the store cannot be reached.
        """


def turn_journal(store: RoomStore) -> TurnJournal | None:
    """``store`` as a turn journal when it is durable, else ``None`` (nothing to record)."""
    if getattr(store, "durable", False) and isinstance(store, TurnJournal):
        return store
    return None


class InMemoryStore:
    """Rooms and their history in this process's memory.

    ``recent_events`` costs O(limit) whatever the room's age, so a turn that reads a window
    of history does not slow down as the room grows.
    """

    durable = False
    """Nothing survives the process: turns are not journaled."""

    def __init__(self) -> None:
        self._rooms: dict[str, Room] = {}
        self._participants: dict[str, dict[str, Participant]] = {}
        self._bindings: dict[str, dict[str, ChannelBinding]] = {}
        self._events: dict[str, list[RoomEvent]] = {}

    async def create_room(self, room: Room) -> None:
        """Store a new room.

        Raises:
            ValueError: a room with this id exists.
        """
        if room.id in self._rooms:
            raise ValueError(f"Room {shown(room.id)} already exists")
        self._rooms[room.id] = room
        self._participants[room.id] = {}
        self._bindings[room.id] = {}
        self._events[room.id] = []

    async def get_room(self, room_id: str) -> Room | None:
        """The room with this id, or ``None``."""
        return self._rooms.get(room_id)

    async def add_participant(self, participant: Participant) -> None:
        """Add someone to a room's roster; the first record of a participant is kept.

        Raises:
            KeyError: no such room.
        """
        _of_room(self._participants, participant.room_id).setdefault(participant.id, participant)

    async def list_participants(self, room_id: str) -> list[Participant]:
        """The room's roster, in the order people joined."""
        return list(self._participants.get(room_id, {}).values())

    async def add_binding(self, binding: ChannelBinding) -> None:
        """Attach a channel to a room; attaching it again replaces the binding.

        Raises:
            KeyError: no such room.
        """
        _of_room(self._bindings, binding.room_id)[binding.channel_id] = binding

    async def list_bindings(self, room_id: str) -> list[ChannelBinding]:
        """The room's bindings, in the order the channels were first attached."""
        return list(self._bindings.get(room_id, {}).values())

    async def remove_binding(self, room_id: str, channel_id: str) -> bool:
        """Detach a channel from a room; ``False`` when it was not attached."""
        return self._bindings.get(room_id, {}).pop(channel_id, None) is not None

    async def rooms_for_channel(self, channel_id: str) -> list[str]:
        """The ids of the rooms the channel is attached to, oldest room first."""
        return [room_id for room_id, bound in self._bindings.items() if channel_id in bound]

    async def add_event(self, event: RoomEvent) -> None:
        """Append an event to its room's history.

        Raises:
            KeyError: no such room.
        """
        _of_room(self._events, event.room_id).append(event)

    async def list_events(self, room_id: str, offset: int = 0, limit: int = 50) -> list[RoomEvent]:
        """The room's events, oldest first, from ``offset``, at most ``limit``."""
        if limit <= 0:
            return []
        offset = max(offset, 0)
        return self._events.get(room_id, [])[offset : offset + limit]

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        """The last ``limit`` events of the room, oldest first."""
        events = self._events.get(room_id, [])
        if limit <= 0:
            return []
        return events[-limit:]


_Part = TypeVar("_Part")


def _of_room(parts: dict[str, _Part], room_id: str) -> _Part:
    """The room's share of ``parts`` (its roster, bindings or history).

    Raises:
        KeyError: no such room, the message saying so as the durable stores do.
    """
    try:
        return parts[room_id]
    except KeyError:
        raise KeyError(f"No room {shown(room_id)} in the store: create it first") from None

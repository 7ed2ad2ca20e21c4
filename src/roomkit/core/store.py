"""The kit's store of rooms, rosters, bindings and event history, in memory."""

from __future__ import annotations

from typing import Protocol

from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent

__all__ = ["InMemoryStore", "RoomStore"]


class RoomStore(Protocol):
    """What the kit needs from a room store."""

    async def create_room(self, room: Room) -> None: ...
    async def get_room(self, room_id: str) -> Room | None: ...
    async def add_participant(self, participant: Participant) -> None: ...
    async def list_participants(self, room_id: str) -> list[Participant]: ...
    async def add_binding(self, binding: ChannelBinding) -> None: ...
    async def list_bindings(self, room_id: str) -> list[ChannelBinding]: ...
    async def rooms_for_channel(self, channel_id: str) -> list[str]: ...
    async def add_event(self, event: RoomEvent) -> None: ...
    async def list_events(
        self, room_id: str, offset: int = 0, limit: int = 50
    ) -> list[RoomEvent]: ...
    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]: ...


class InMemoryStore:
    """Rooms and their history in this process's memory.

    ``recent_events`` costs O(limit) whatever the room's age, so a turn that reads a window
    of history does not slow down as the room grows.
    """

    def __init__(self) -> None:
        self._rooms: dict[str, Room] = {}
        self._participants: dict[str, dict[str, Participant]] = {}
        self._bindings: dict[str, dict[str, ChannelBinding]] = {}
        self._events: dict[str, list[RoomEvent]] = {}

    async def create_room(self, room: Room) -> None:
        if room.id in self._rooms:
            raise ValueError(f"Room {room.id!r} already exists")
        self._rooms[room.id] = room
        self._participants[room.id] = {}
        self._bindings[room.id] = {}
        self._events[room.id] = []

    async def get_room(self, room_id: str) -> Room | None:
        return self._rooms.get(room_id)

    async def add_participant(self, participant: Participant) -> None:
        self._participants[participant.room_id].setdefault(participant.id, participant)

    async def list_participants(self, room_id: str) -> list[Participant]:
        return list(self._participants.get(room_id, {}).values())

    async def add_binding(self, binding: ChannelBinding) -> None:
        self._bindings[binding.room_id][binding.channel_id] = binding

    async def list_bindings(self, room_id: str) -> list[ChannelBinding]:
        return list(self._bindings.get(room_id, {}).values())

    async def rooms_for_channel(self, channel_id: str) -> list[str]:
        return [room_id for room_id, bound in self._bindings.items() if channel_id in bound]

    async def add_event(self, event: RoomEvent) -> None:
        self._events[event.room_id].append(event)

    async def list_events(self, room_id: str, offset: int = 0, limit: int = 50) -> list[RoomEvent]:
        """The room's events, oldest first, from ``offset``, at most ``limit``."""
        return self._events.get(room_id, [])[offset : offset + limit]

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        """The last ``limit`` events of the room, oldest first."""
        events = self._events.get(room_id, [])
        if limit <= 0:
            return []
        return events[-limit:]

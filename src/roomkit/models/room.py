"""Rooms, their participants and channel bindings, and the events a room records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from roomkit.models.clock import utcnow
from roomkit.models.event_ids import next_event_id

__all__ = [
    "ChannelBinding",
    "FrameworkEvent",
    "InboundMessage",
    "InboundResult",
    "Participant",
    "Room",
    "RoomEvent",
    "TextContent",
]


@dataclass(frozen=True, slots=True)
class Room:
    """A conversation space: channels are attached to it and participants talk in it."""

    id: str
    """The room's id."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data the application keeps on the room."""
    created_at: datetime = field(default_factory=utcnow)
    """When the room was created (UTC)."""


@dataclass(frozen=True, slots=True)
class Participant:
    """Someone in a room's roster."""

    id: str
    """The participant's id (the ``sender_id`` of their messages)."""
    room_id: str
    """The room they belong to."""
    name: str | None = None
    """A display name, if known."""
    joined_at: datetime = field(default_factory=utcnow)
    """When they joined (UTC)."""


@dataclass(frozen=True, slots=True)
class ChannelBinding:
    """A channel attached to a room."""

    room_id: str
    """The room."""
    channel_id: str
    """The channel."""
    category: str | None = None
    """A free-form category (e.g. "transport", "intelligence")."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Per-room options; ``metadata["tools"]`` offers extra tools to an AI channel's turns."""
    group: str | None = None
    """A name the application gives the binding (``attach_channel(..., group=...)``); kept
    and read back, it changes no routing."""


@dataclass(frozen=True, slots=True)
class TextContent:
    """A text message body."""

    body: str
    """The text."""
    language: str | None = None
    """A language tag, if known."""


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """A message arriving from a channel, from one sender."""

    channel_id: str
    """The channel it arrived on."""
    sender_id: str
    """Who sent it: a participant id, or "" for an authorless message (a system injection)."""
    content: TextContent
    """What was said."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data carried with the message."""


@dataclass(frozen=True, slots=True)
class RoomEvent:
    """A message recorded in a room's history."""

    room_id: str
    """The room."""
    channel_id: str
    """The channel it came from (the AI channel for the agent's replies)."""
    sender_id: str
    """Who said it."""
    content: TextContent
    """What was said."""
    id: int = field(default_factory=next_event_id)
    """The event's id: increasing in this process, above every id a durable room store held
    when this process opened it, and distinct from the ids of the events that the other
    processes open on that store create; below ``2**53``, exact in JavaScript clients."""
    created_at: datetime = field(default_factory=utcnow)
    """When it was recorded (UTC)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data carried with the event."""


@dataclass(frozen=True, slots=True)
class InboundResult:
    """What ``RoomKit.process_inbound`` did with a message."""

    event: RoomEvent
    """The inbound message as recorded in the room."""
    responses: tuple[RoomEvent, ...] = ()
    """The replies the room's AI channels gave in this turn."""
    answered: str | None = None
    """The id of the open request the message answered (it then started no turn)."""


@dataclass(frozen=True, slots=True)
class FrameworkEvent:
    """A notification the kit emits to its ``kit.on(name)`` listeners."""

    type: str
    """The event's name, e.g. ``"user_input_required"``."""
    data: dict[str, Any]
    """The event's data."""
    room_id: str | None = None
    """The room it concerns, if any."""
    timestamp: datetime = field(default_factory=utcnow)
    """When it was emitted (UTC)."""

"""The call site: where one tool call is served, as every step of its path reads it.

A :class:`CallSite` names the kit, the channel and its type (the door of the call: ``ai``,
``realtime_voice``, ``conference``), the room, the actor the call is for, the tool-call id,
the tools offered where the call was made (a turn's, a session's), and the session when there
is one. The checks, the gate, serving and the report read it and nothing else of the channel,
so each channel builds one per call and every channel's call takes the same path.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roomkit.models.tool_call import ToolCallEvent

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit
    from roomkit.models.enums import ChannelType
    from roomkit.models.hooks import RoomContext
    from roomkit.models.room import Room
    from roomkit.providers.ai.base import AITool

__all__ = ["CallSite", "RoomContexts", "room_context"]

logger = logging.getLogger("roomkit.channels")

RoomContexts = Callable[[], Awaitable["RoomContext | None"]]
"""``await contexts()``: the room context the call's hooks receive, ``None`` if unavailable."""


@dataclass(frozen=True, slots=True)
class CallSite:
    """Where one call is served: what every step of the call's path reads."""

    kit: RoomKit | None
    """The kit the channel is registered with (no hooks run without one)."""
    channel_id: str
    """The channel serving the call, on every event and request."""
    channel_type: ChannelType
    """The door: the events' ``channel_type`` and the requests' door."""
    room: Room
    """The call's room."""
    actor_id: str | None
    """Whom the call is for (the message's sender, the caller, the participant speaking),
    or ``None`` when nobody is known."""
    tool_call_id: str
    """The provider's call id, or one the channel made for a call it numbered itself."""
    tools: Mapping[str, AITool]
    """The tools offered where the call was made, by name."""
    contexts: RoomContexts
    """Builds the room context the hooks receive."""
    session: Any = None
    """The voice or conference session of the call, when there is one."""

    @property
    def room_id(self) -> str:
        """The call's room id."""
        return self.room.id

    def event(
        self, name: str, arguments: dict[str, Any], result: str | None = None, **flags: Any
    ) -> ToolCallEvent:
        """The event the hooks receive about the call (``flags``: how it ended)."""
        return ToolCallEvent(
            self.channel_id,
            self.channel_type,
            self.tool_call_id,
            name,
            arguments,
            result,
            self.room_id,
            session=self.session,
            actor_id=self.actor_id,
            **flags,
        )


async def room_context(kit: RoomKit | None, room_id: str) -> RoomContext | None:
    """The room context hooks receive; ``None`` (logged) when it cannot be built."""
    if kit is None:
        return None
    try:
        return await kit.room_context(room_id)
    except Exception:
        logger.exception("No room context for room %s", room_id)
        return None

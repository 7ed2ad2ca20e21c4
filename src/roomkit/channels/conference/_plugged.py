"""A realtime config plugged into a conference channel: its wiring, its sessions, its calls.

A :class:`Plugged` serves the calls of the sessions started under its config: human-input
names first, then the config's ``tool_handler``, read at every call, on the ``conference``
door. It listens to the config's provider while it is plugged, and keeps the rooms whose
session it started, by session id, so that what the provider reports about a session (a tool
call, a cancellation, an error) reaches that session's room. A call goes through the realtime
call pipeline and back to the provider the way a voice channel's function calls do; it is
for the participant who spoke last in the room.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from roomkit.channels._voice.doors import VoiceCall, take
from roomkit.channels._voice.live import Door
from roomkit.channels.conference.config import ConferenceRealtimeConfig
from roomkit.models.enums import ChannelType
from roomkit.tools.compose import ToolHandler
from roomkit.tools.human_input import HumanInputToolHandler
from roomkit.tools.texts import MODEL_CANCELLED
from roomkit.voice.realtime.base import RealtimeProvider, RealtimeSession

if TYPE_CHECKING:
    from roomkit.channels.conference._rooms import ConferenceRoom
    from roomkit.channels.conference.channel import ConferenceChannel
    from roomkit.core.framework import RoomKit

__all__ = ["Plugged"]

logger = logging.getLogger("roomkit.channels.conference")


class Plugged:
    """A realtime config plugged into a conference channel, and the wiring to undo.

    Args:
        conference: the channel it is plugged into.
        config: the config.
    """

    def __init__(self, conference: ConferenceChannel, config: ConferenceRealtimeConfig) -> None:
        self.conference = conference
        self.config = config
        self.human_input_handler: HumanInputToolHandler | None = config.human_input_handler
        """The tools that ask a person, served first (fixed for the config's life)."""
        self.registration: int | None = None
        """The token of the route to ON_USER_INPUT_REQUIRED, once the kit is known."""
        self.rooms: dict[str, ConferenceRoom] = {}
        """The rooms whose running session was started under this config, by session id."""
        self._unsubscribe: list[Callable[[], None]] = []

    @property
    def channel_id(self) -> str:
        """The conference channel's id."""
        return self.conference.channel_id

    @property
    def channel_type(self) -> ChannelType:
        """Always ``conference``: the door of every call and request."""
        return ChannelType.CONFERENCE

    @property
    def provider(self) -> RealtimeProvider:
        """The config's provider (fixed for the config's life)."""
        return self.config.provider

    @property
    def kit(self) -> RoomKit | None:
        """The kit the conference channel is registered with."""
        return self.conference.kit

    @property
    def tool_handler(self) -> ToolHandler | None:
        """The config's host tool handler, as it is now, called ``(name, arguments)``."""
        return self.config.host_handler()

    @property
    def tool_timeouts(self) -> Mapping[str, float | None] | None:
        """The config's per-tool bounds, as they are now."""
        return self.config.tool_timeouts

    @property
    def tool_timeout_seconds(self) -> float | None:
        """The config's bound of a host tool call, as it is now."""
        return self.config.tool_timeout_seconds

    # -- what the provider reports -----------------------------------------------------------

    def listen(self) -> None:
        """Take the provider's tool calls, cancellations and errors until :meth:`deafen`."""
        provider = self.provider
        self._unsubscribe = [
            provider.on_tool_call(self._on_tool_call),
            provider.on_tool_call_cancelled(self._on_tool_call_cancelled),
            provider.on_error(self._on_error),
        ]

    def deafen(self) -> None:
        """Stop taking what the provider reports."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    async def _on_tool_call(
        self, session: RealtimeSession, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        room = self.rooms.get(session.id)
        live, plugged = (room.live, room.plugged) if room is not None else (None, None)
        if live is None or plugged is None or live.session is not session or not live.open:
            logger.debug(
                "Call %s for session %s, which is not open here: ignored", call_id, session.id
            )
            return
        speaker = room.speaker if room is not None else None
        take(VoiceCall(plugged, live, Door.FUNCTION_CALL, call_id, name, arguments, speaker))

    async def _on_tool_call_cancelled(self, session: RealtimeSession, call_ids: list[str]) -> None:
        room = self.rooms.get(session.id)
        if room is not None and room.live is not None:
            await room.live.cut_calls(list(call_ids), MODEL_CANCELLED)

    async def _on_error(self, session: RealtimeSession, code: str, message: str) -> None:
        if session.id in self.rooms:
            logger.warning(
                "Realtime provider reported an error in session %s: %s: %s",
                session.id,
                code,
                message,
            )

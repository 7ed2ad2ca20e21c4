"""A realtime config plugged into a conference channel, as the call steps see it.

A :class:`Plugged` serves the calls of the sessions started under its config: human-input
names first, then the config's ``tool_handler``, read at every call, on the ``conference``
door. It keeps the wiring that unplugging undoes. Its calls go through the realtime call
pipeline and back to the provider the way a voice channel's function calls do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from roomkit.channels.conference.config import ConferenceRealtimeConfig
from roomkit.models.enums import ChannelType
from roomkit.tools.compose import ToolHandler
from roomkit.tools.human_input import HumanInputToolHandler
from roomkit.voice.realtime.base import RealtimeProvider

if TYPE_CHECKING:
    from roomkit.channels.conference.channel import ConferenceChannel
    from roomkit.core.framework import RoomKit

__all__ = ["Plugged"]


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
        self.unsubscribe: list[Callable[[], None]] = []
        """Unregisters the channel's provider callbacks."""

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
        """The config's host tool handler, as it is now."""
        return self.config.tool_handler

    def call_bound(self, name: str) -> float | None:
        """How long a call to ``name`` may run, or ``None`` for no channel bound."""
        return self.config.call_bound(name)

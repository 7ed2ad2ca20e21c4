"""What every channel is to the kit: an id, a type, and a place to be wired and closed."""

from __future__ import annotations

import asyncio
from abc import ABC
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from roomkit.core.exceptions import ChannelNotRegisteredError
from roomkit.models.enums import ChannelType
from roomkit.models.room import Room, RoomEvent
from roomkit.models.shown import shown

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["Channel", "TransportChannel"]


class Channel(ABC):
    """A channel registered with a :class:`~roomkit.RoomKit`."""

    channel_type: ChannelType

    def __init__(self, channel_id: str) -> None:
        if not isinstance(channel_id, str) or not channel_id:
            raise ValueError(f"channel_id must be a non-empty string, got {channel_id!r}")
        self.channel_id = channel_id
        self._kit: RoomKit | None = None
        self._closing: asyncio.Task[None] | None = None

    @property
    def kit(self) -> RoomKit | None:
        """The kit this channel is registered with, if any."""
        return self._kit

    def registered_kit(self) -> RoomKit:
        """The kit this channel is registered with.

        Raises:
            ChannelNotRegisteredError: it is not registered: call ``kit.register_channel()``.
        """
        kit = self._kit
        if kit is None:
            raise ChannelNotRegisteredError(self.channel_id)
        return kit

    async def attached_room(self, room_id: str) -> Room:
        """The room ``room_id``, checked to have this channel attached.

        Raises:
            ChannelNotRegisteredError: the channel is not registered.
            KeyError: no such room, or the channel is not attached to it.
        """
        kit = self.registered_kit()
        room = await kit.get_room(room_id)
        bindings = await kit.store.list_bindings(room_id)
        if not any(binding.channel_id == self.channel_id for binding in bindings):
            raise KeyError(
                f"Channel {shown(self.channel_id)} is not attached to room {shown(room_id)}: "
                "call kit.attach_channel(room_id, channel_id) first"
            )
        return room

    def set_framework(self, kit: RoomKit) -> None:
        """Called by ``kit.register_channel``: wire the channel to the kit."""
        self._kit = kit

    async def close(self) -> None:  # noqa: B027 - closing is optional for a channel
        """Stop the channel's work; the kit calls it on ``kit.close()``."""

    async def _close_once(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``work`` (the channel's closing) once, in a task of its own, and wait for it.

        A close may come from inside the work it cuts: a hook or a tool of one of the
        channel's own turns or calls. Awaited in place, it would wait for itself to end. In
        a task of its own it runs to the end either way, while the caller, cut with the rest
        of that work, sees ``CancelledError``. A second close waits for the first.
        """
        closing = self._closing
        if closing is None:
            closing = self._closing = asyncio.get_running_loop().create_task(
                work(), name=f"close:{self.channel_id}"
            )
        await asyncio.shield(closing)

    async def on_detach(self, room_id: str) -> None:  # noqa: B027 - optional for a channel
        """Stop the channel's work in ``room_id``; the kit calls it on ``detach_channel``."""


class TransportChannel(Channel):
    """A channel that delivers room events to people (a WebSocket, a chat, ...)."""

    async def deliver(self, event: RoomEvent) -> None:
        """Send ``event`` to the connections of its room."""
        raise NotImplementedError

"""Checks a realtime channel makes of what it is given.

The voice channel and the conference's realtime config take the same settings and check them
the same way when they are built: the back ends and the human-input handler have the right
kind, the tool bounds are positive, the host's tools are a list. A session starts only on a
channel registered with a kit, in a room the channel is attached to. Each check raises with a
message that says what to do instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from roomkit.providers.ai.base import AITool

if TYPE_CHECKING:
    from roomkit.channels.base import Channel
    from roomkit.core.framework import RoomKit
    from roomkit.models.room import Room

__all__ = ["attached_room", "check_kind", "host_tools", "registered_kit", "seconds"]


def check_kind(name: str, value: object, kind: type, *, optional: bool = False) -> None:
    """Check that ``value`` (the argument ``name``) is a ``kind``, or ``None`` if ``optional``.

    Raises:
        TypeError: it is not.
    """
    if optional and value is None:
        return
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")


def seconds(name: str, value: object) -> float | None:
    """A bound in seconds (``None``: unbounded), checked to be positive.

    Raises:
        ValueError: ``value`` is not a positive number (a bool is not one).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")
    return float(value)


def host_tools(tools: object) -> list[AITool]:
    """The host's tool definitions (``AITool`` objects or dicts) as ``AITool`` objects.

    Raises:
        TypeError: ``tools`` is a single tool, or not a list of them.
        pydantic.ValidationError: a dict is not a valid tool definition.
    """
    if tools is None:
        return []
    if isinstance(tools, str | Mapping) or not isinstance(tools, Sequence):
        raise TypeError("tools must be a list of AITool objects (or dicts), not a single tool")
    return [tool if isinstance(tool, AITool) else AITool.model_validate(tool) for tool in tools]


def registered_kit(channel: Channel) -> RoomKit:
    """The kit ``channel`` is registered with.

    Raises:
        RuntimeError: the channel is not registered.
    """
    kit = channel.kit
    if kit is None:
        raise RuntimeError(
            f"Channel {channel.channel_id} is not registered: call kit.register_channel()"
        )
    return kit


async def attached_room(kit: RoomKit, channel_id: str, room_id: str) -> Room:
    """The room ``room_id``, checked to have the channel ``channel_id`` attached.

    Raises:
        KeyError: no such room, or the channel is not attached to it.
    """
    room = await kit.get_room(room_id)
    bindings = await kit.store.list_bindings(room_id)
    if not any(binding.channel_id == channel_id for binding in bindings):
        raise KeyError(
            f"Channel {channel_id!r} is not attached to room {room_id!r}: "
            "call kit.attach_channel(room_id, channel_id) first"
        )
    return room

"""Delivering a room event to the channels of its room, each in the form its ``deliver`` takes.

A channel here delivers with ``await channel.deliver(event)``. A channel written for RoomKit
0.109 takes ``deliver(event, binding, context)``: the binding that joins it to the event's
room, and the room as hooks see it. The form is read from the signature once per class, when
the channel is registered, so a channel of either form gets the room's messages and any other
shape is refused there, not when the first message arrives. What a 0.109 ``deliver`` returns
(its ``ChannelOutput``) is not read.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, cast

from roomkit.core.ports import KitChannel, delivers, positional_fit
from roomkit.models.hooks import RoomContext
from roomkit.models.room import ChannelBinding, RoomEvent

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["check_delivery", "deliver_to"]

RoomDeliver = Callable[[RoomEvent, ChannelBinding, RoomContext], Awaitable[object]]
"""A ``deliver`` in RoomKit 0.109's form: the event, the channel's binding, the room."""

_WITH_ROOM: dict[type, bool] = {}


def check_delivery(channel: object) -> None:
    """Read the form of ``channel``'s ``deliver``, if it delivers at all.

    Raises:
        TypeError: its ``deliver`` takes neither ``(event)`` nor ``(event, binding,
            context)``.
    """
    if delivers(channel):
        _with_room(channel)


def _with_room(channel: object) -> bool:
    """Whether ``channel`` delivers in the 0.109 form (decided once per class)."""
    kind = type(channel)
    known = _WITH_ROOM.get(kind)
    if known is not None:
        return known
    method = getattr(channel, "deliver")  # noqa: B009 - the member ``delivers`` found
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        # Nothing to read (a builtin): it is called with the event alone.
        known = False
    else:
        if positional_fit(signature, 1):
            known = False
        elif positional_fit(signature, 3):
            known = True
        else:
            raise TypeError(
                f"{kind.__name__}.deliver must take (event) or (event, binding, context); "
                f"it takes {signature}"
            )
    _WITH_ROOM[kind] = known
    return known


async def deliver_to(kit: RoomKit, event: RoomEvent, channels: Iterable[KitChannel]) -> None:
    """Deliver ``event`` to each of ``channels`` that delivers, but the one it came from."""
    context: RoomContext | None = None
    for channel in channels:
        if not delivers(channel) or channel.channel_id == event.channel_id:
            continue
        if not _with_room(channel):
            await channel.deliver(event)
            continue
        if context is None:
            context = await kit.room_context(event.room_id)
        binding = next((b for b in context.bindings if b.channel_id == channel.channel_id), None)
        if binding is not None:  # None: detached since the room's channels were read
            await cast(RoomDeliver, channel.deliver)(event, binding, context)

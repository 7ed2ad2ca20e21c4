"""What every door on a kit sets up alike: its own channel, and the handler it serves.

A door that records people's messages in the kit's rooms (the desk's chat, the AG-UI
endpoint, the A2A executor) does so through a channel of its own kind, registered under the
id it is given, or found there when the application registered it first
(:func:`door_channel`). A door given no handler serves the kit's one routed human-input
handler (:func:`routed_handler`). Each door words its errors by naming itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from roomkit.channels.base import Channel

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["door_channel", "routed_handler"]

_D = TypeVar("_D", bound=Channel)


def door_channel(
    kit: RoomKit,
    channel_id: str,
    kind: type[_D],
    *,
    door: str,
    make: Callable[[str], _D] | None = None,
) -> _D:
    """The kit's channel ``channel_id``, a ``kind`` made and registered when the kit has none.

    Args:
        kit: the kit.
        channel_id: the id the door's messages are recorded under.
        kind: the door's channel class.
        door: who asks, in the error that refuses another kind of channel.
        make: builds the channel from its id; ``kind`` itself when ``None``.

    Raises:
        ValueError: the id is another kind of channel of the kit.
    """
    channel = kit.get_channel(channel_id)
    if channel is None:
        made = (make or kind)(channel_id)
        kit.register_channel(made)
        return made
    if not isinstance(channel, kind):
        raise ValueError(
            f"Channel {channel_id!r} is already registered, as a channel of kind "
            f"{type(channel).__name__}: give {door} a channel id of its own"
        )
    return channel


def routed_handler(kit: RoomKit, *, door: str, shows: str) -> HumanInputHandler:
    """The kit's one routed human-input handler.

    Args:
        kit: the kit.
        door: who takes ``handler=`` in the error that asks for one (``"the desk"``).
        shows: what the handler is for, in the error that asks to choose one
            (``"the desk shows"``).

    Raises:
        ValueError: the kit routes none, or several.
    """
    handlers = kit.human_input_handlers
    if len(handlers) == 1:
        return handlers[0]
    if not handlers:
        raise ValueError(
            "The kit routes no human-input handler: register a channel with "
            f"human_input_handler=..., or pass handler=HumanInputHandler(store=...) to {door}"
        )
    raise ValueError(
        f"The kit routes {len(handlers)} human-input handlers: pass handler=... to choose "
        f"the one {shows}"
    )

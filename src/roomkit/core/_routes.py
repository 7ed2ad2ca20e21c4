"""Which kit routes each channel id of a shared human-input handler.

A handler keeps one scope per channel id: one notification callback, and one
``close(channel_id=...)`` for all of that id's requests. Several kits may share a handler,
each with channels of its own ids; two kits routing the same id would share one scope.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from roomkit.core.ports import HumanInputRoute

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["claim_route"]


_ROUTES: weakref.WeakKeyDictionary[HumanInputRoute, dict[str, weakref.ref[RoomKit]]] = (
    weakref.WeakKeyDictionary()
)
"""For each routed handler, the kit that routes each channel id."""


def claim_route(handler: HumanInputRoute, channel_id: str, kit: RoomKit) -> None:
    """Record ``kit`` as the router of ``handler``'s ``channel_id``.

    A handler keeps one scope per channel id: one callback, and ``close(channel_id=...)``
    for all of its requests. Two kits routing one id would send one kit's questions to the
    other's hooks, and the first kit to close would close the other's channel too. A kit
    takes the id over once the other kit has closed, or no longer holds an open channel
    of that id (a channel rebuilt and registered again).

    Raises:
        ValueError: another kit holds an open channel of this id routed to ``handler``.
    """
    try:
        routes = _ROUTES.setdefault(handler, {})
    except TypeError:  # a handler of your own that cannot be weakly referenced or hashed
        return
    known = routes.get(channel_id)
    other = known() if known is not None else None
    if other is not None and other is not kit and not other.closed:
        channel = other.get_channel(channel_id)
        if channel is not None and not getattr(channel, "closing", False):
            raise ValueError(
                f"This human-input handler already serves channel {channel_id!r} in another "
                "RoomKit: give the channel another id in one of the kits, or give each its "
                "own HumanInputToolHandler"
            )
    routes[channel_id] = weakref.ref(kit)

"""The listeners a back end keeps for one kind of event.

The realtime voice back ends (the provider, the transport, each session) and the conference
back end report their events the same way: a listener registers an async callable and gets
back a function that unregisters it; firing an event awaits every listener in registration
order. A listener that raises is logged on the back end's logger and the others still hear
the event.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from roomkit._registry import Registry

__all__ = ["Callbacks"]

_C = TypeVar("_C", bound=Callable[..., Awaitable[None]])


class Callbacks(Registry[_C]):
    """The callbacks registered for one kind of event, called in registration order.

    Args:
        kind: the kind of event, as messages name it (``"tool call"``, ``"audio"``).
        logger: where a failing callback is logged.
    """

    def __init__(self, kind: str, logger: logging.Logger) -> None:
        super().__init__(f"{kind} callback")
        self._kind = kind
        self._logger = logger

    async def fire(self, *args: Any) -> None:
        """Await every callback with ``args``; return once each has taken the event."""
        for callback in list(self._items):
            try:
                await callback(*args)
            except Exception:
                # One listener's bug must not stop the back end's event loop or the others.
                self._logger.exception("%s callback %r failed", self._kind, callback)

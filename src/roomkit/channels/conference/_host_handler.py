"""The shape of a conference's host tool handler, read from its signature once, when given.

Every channel calls its host handler as ``await handler(name, arguments)``. RoomKit 0.109's
conference called it as ``await handler(room_id, name, arguments)``, so a conference takes
either: a handler that accepts two positional arguments is called the channel way, one that
needs three gets the call's room first. Any other shape is refused when it is given, not when
the first call arrives.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, cast

from roomkit.core.ports import positional_fit
from roomkit.tools.compose import ToolHandler
from roomkit.tools.context import current_tool_room_id

__all__ = ["RoomToolHandler", "host_handler"]

RoomToolHandler = Callable[[str, str, dict[str, Any]], Awaitable[str]]
"""A host tool handler in RoomKit 0.109's conference form: ``await handler(room_id, name,
arguments)`` returns the result text."""


def host_handler(handler: object) -> ToolHandler | None:
    """``handler`` as the channel calls it, ``await served(name, arguments)``.

    Raises:
        TypeError: ``handler`` is not callable, or takes neither ``(name, arguments)`` nor
            ``(room_id, name, arguments)``.
    """
    if handler is None:
        return None
    if not callable(handler):
        raise TypeError(f"tool_handler must be an async callable, got {handler!r}")
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        # Nothing to read (some builtins): it is called the channel way.
        return cast(ToolHandler, handler)
    if positional_fit(signature, 2):
        return cast(ToolHandler, handler)
    if positional_fit(signature, 3):
        return _RoomFirst(cast(RoomToolHandler, handler))
    raise TypeError(
        f"tool_handler must take (name, arguments) or (room_id, name, arguments); "
        f"{handler!r} takes {signature}"
    )


class _RoomFirst:
    """A ``(room_id, name, arguments)`` handler, called with the room of the current call."""

    def __init__(self, handler: RoomToolHandler) -> None:
        self.handler = handler

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        # The realtime call runs inside its session's tool context, which names its room.
        return await self.handler(current_tool_room_id() or "", name, arguments)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.handler!r})"

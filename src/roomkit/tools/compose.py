"""Chain tool handlers: the first one that serves a name answers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from roomkit.core.exceptions import UnservedToolCallError

__all__ = ["ToolHandler", "compose_tool_handlers"]

ToolHandler = Callable[[str, dict[str, Any]], Awaitable[str]]
"""A tool handler: ``await handler(name, arguments)`` returns the result text."""


def _is_unknown_tool_envelope(result: str) -> bool:
    """True for the ``{"error": "Unknown tool: ..."}`` decline that older handlers return."""
    if not result.startswith('{"error": "Unknown tool:'):
        return False
    try:
        body = json.loads(result)
    except ValueError:
        return False
    return isinstance(body, dict) and len(body) == 1


def compose_tool_handlers(*handlers: ToolHandler) -> ToolHandler:
    """One handler that tries ``handlers`` in order.

    A handler declines a name by raising :class:`UnservedToolCallError` (or by returning the
    legacy ``{"error": "Unknown tool: <name>"}`` envelope); the next one is then tried. The
    last handler's answer is returned as it is, decline included.

    Raises:
        ValueError: fewer than two handlers were given.
    """
    if len(handlers) < 2:
        raise ValueError("compose_tool_handlers requires at least 2 handlers")
    for handler in handlers:
        if not callable(handler):
            raise TypeError(f"compose_tool_handlers takes callables, got {handler!r}")
    *firsts, last = handlers

    async def composed(name: str, arguments: dict[str, Any]) -> str:
        for handler in firsts:
            try:
                result = await handler(name, arguments)
            except UnservedToolCallError:
                continue
            if not _is_unknown_tool_envelope(result):
                return result
        return await last(name, arguments)

    return composed

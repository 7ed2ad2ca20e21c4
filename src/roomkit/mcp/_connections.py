"""Which connection and call an MCP message belongs to, and the calls each connection has open.

A stdio or in-process connection is told apart by the token its lifespan yields (entered
once per connection; once for every HTTP session), an HTTP session by its ``mcp-session-id``
as well. A call is its connection and its request id, as the SDK correlates ids.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.dispatcher import coerce_request_id

__all__ = ["Call", "OpenCalls", "call_of", "connection_lifespan", "connection_of"]

CONNECTION_TOKEN = "roomkit.connection"

Call = tuple[str, int | str | None]
"""A call: its connection and its request id, as the SDK correlates ids ("7" is 7)."""


@asynccontextmanager
async def connection_lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
    """Entered once per stdio or in-process connection (once for all HTTP sessions)."""
    yield {CONNECTION_TOKEN: uuid.uuid4().hex}


def call_of(ctx: ServerRequestContext[Any]) -> Call:
    request_id = ctx.request_id
    return (connection_of(ctx), None if request_id is None else coerce_request_id(request_id))


def connection_of(ctx: ServerRequestContext[Any]) -> str:
    """Which connection a message came on: its lifespan's token and its HTTP session."""
    lifespan = ctx.lifespan_context
    token = lifespan.get(CONNECTION_TOKEN, "") if isinstance(lifespan, dict) else ""
    headers = getattr(ctx.request, "headers", None)
    session = headers.get("mcp-session-id", "") if headers is not None else ""
    return f"{token}:{session}"


class OpenCalls:
    """How many calls each connection has running now, at most ``cap`` each."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._counts: dict[str, int] = {}

    def take(self, connection: str) -> int | None:
        """Count one more call of ``connection``; ``None`` when it has ``cap`` running
        already, else the calls it had before this one. Each taken place is :meth:`freed`."""
        running = self._counts.get(connection, 0)
        if running >= self.cap:
            return None
        self._counts[connection] = running + 1
        return running

    def free(self, connection: str) -> None:
        """One call of ``connection`` ended, however it ended."""
        left = self._counts[connection] - 1
        if left:
            self._counts[connection] = left
        else:
            del self._counts[connection]

    def running(self, connection: str) -> int:
        """The calls ``connection`` has running now."""
        return self._counts.get(connection, 0)

"""The MCP server's book of calls: which request each running call asks, the keyed calls
kept for a cancellation that may still come, how many calls each connection holds open, and
the middleware that turns an MCP cancellation into the request's withdrawal.

A call is its connection and its request id (:mod:`roomkit.mcp._connections`). A running
call is entered before anything is recorded and leaves however it ends; a keyed call on a
durable store stays kept until its deadline, even when its client left without a word.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.dispatcher import as_request_id, coerce_request_id

from roomkit.mcp._connections import Call, OpenCalls, connection_of
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["CallBook"]


class CallBook:
    """The calls of one server, across its connections.

    Args:
        handler: the server's handler, which withdraws a cancelled call's request.
        max_open_calls: the calls one connection may hold open at once.
    """

    def __init__(self, handler: HumanInputHandler, max_open_calls: int) -> None:
        self._handler = handler
        self.kept: dict[Call, tuple[str, float]] = {}
        """Keyed calls on a durable store now waiting, by (connection, request id): the
        request and when its deadline passes (loop time). A call whose client left without
        a cancellation stays here until then, for a cancellation that may still come."""
        self.running: dict[Call, str | None] = {}
        """Calls running now, by (connection, request id): the request each asks, once
        made. A request id names one running call of its connection."""
        self._open = OpenCalls(max_open_calls)

    def enter(self, call: Call) -> bool:
        """Count ``call`` as running; ``False`` (and nothing counted) when its connection
        holds as many calls open as it may. Each entered call :meth:`leave` s."""
        if self._open.take(call[0]) is None:
            return False
        self.running[call] = None
        return True

    def leave(self, call: Call) -> None:
        """``call`` ended, however it ended: its connection's place is free again."""
        del self.running[call]
        self._open.free(call[0])

    def open_calls(self, connection: str) -> int:
        """The calls ``connection`` holds open now."""
        return self._open.running(connection)

    def asks(self, call: Call, pending_id: str) -> None:
        """``call`` waits on request ``pending_id`` now."""
        self.running[call] = pending_id

    def keep(self, call: Call, pending_id: str, until: float, now: float) -> None:
        """Keep keyed ``call`` on ``pending_id`` until loop time ``until``, for a
        cancellation that may come after its client left."""
        self._forget_past(now)
        self.kept[call] = (pending_id, until)

    def unkeep(self, call: Call) -> None:
        """``call`` ended on its own: nothing is left to withdraw."""
        self.kept.pop(call, None)

    async def withdraw_cancelled(
        self, ctx: ServerRequestContext[Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: an MCP cancellation of a kept call withdraws its request, and so
        does one of a running call the SDK no longer knows (its id was given again)."""
        result = await call_next(ctx)
        if ctx.method == "notifications/cancelled" and ctx.params is not None:
            request_id = as_request_id(ctx.params.get("requestId"))
            if request_id is None:
                return result
            call = (connection_of(ctx), coerce_request_id(request_id))
            kept = self.kept.pop(call, None)
            pending_id = kept[0] if kept is not None else self.running.get(call)
            if pending_id is not None:
                await self._handler.arelease(pending_id)
        return result

    def _forget_past(self, now: float) -> None:
        """Drop the kept calls whose deadline has passed: their requests are settled, and
        nothing is left to withdraw. The oldest come first (one timeout for every call)."""
        kept = self.kept
        while kept:
            call, (_, until) = next(iter(kept.items()))
            if until > now:
                return
            del kept[call]

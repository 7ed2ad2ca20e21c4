"""The reasoning door: a backend that thinks for the voice model, calling tools as it goes.

A full-duplex speech model keeps talking while something else reasons: an agent, a larger
model. The channel hands that backend the caller's request and a ``call_tool`` function; every
call the backend makes through it goes through the channel's own pipeline (declare, validate,
gate, serve, report), so a human-input tool asks the caller exactly as it would on the
provider's function call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from roomkit.providers.ai.base import AITool
from roomkit.voice.realtime.base import RealtimeSession

__all__ = ["CallTool", "ReasoningBackend"]

CallTool = Callable[[str, dict[str, Any]], Awaitable[str]]
"""``await call_tool(name, arguments)``: run a call through the channel; returns what the
model reads (the result, or a JSON error object)."""


@runtime_checkable
class ReasoningBackend(Protocol):
    """Reasons on the caller's behalf; given to the channel as ``reasoning_backend=``."""

    async def reason(
        self,
        session: RealtimeSession,
        text: str,
        *,
        tools: list[AITool],
        call_tool: CallTool,
    ) -> str:
        """Think about ``text`` for ``session``; return what the voice model should say.

        Args:
            session: the session the request comes from.
            text: the request.
            tools: the tools declared to the session, which ``call_tool`` serves.
            call_tool: runs one call through the channel's pipeline.
        """
        ...

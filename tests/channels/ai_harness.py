"""Helpers for the channel tests: scripted calls, and a kit driven through ``process_inbound``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from roomkit import (
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    InboundResult,
    RoomKit,
    TextContent,
    ToolCallEvent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.models.room import RoomEvent
from roomkit.providers.ai.base import AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider

ASK = AITool(
    name="Ask",
    description="Ask the user a question and wait for the answer.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)

LOOKUP = AITool(
    name="lookup",
    description="Look something up.",
    parameters={"type": "object", "properties": {"key": {"type": "string"}}},
)

DONE = AIResponse(content="Done.")


def tool_call(name: str, arguments: dict[str, Any] | None = None, id: str = "tc-1") -> AIToolCall:
    """One call the model makes."""
    return AIToolCall(id=id, name=name, arguments=arguments or {})


def ask(question: str = "Color?", id: str = "tc-1") -> AIToolCall:
    """A call to the human-input tool ``Ask``."""
    return tool_call("Ask", {"question": question}, id=id)


def round_of(*calls: AIToolCall) -> AIResponse:
    """A model response making ``calls`` in one round."""
    return AIResponse(tool_calls=list(calls))


def new_human(**options: Any) -> HumanInputToolHandler:
    """The human-input tools ``Ask`` (declared) with a 300 s answer timeout."""
    options.setdefault("timeout", 300)
    options.setdefault("tool_definitions", [ASK])
    return HumanInputToolHandler({"Ask"}, **options)


@dataclass
class Harness:
    """A kit, its AI channel ``agent`` and WebSocket channel ``ws``, and the room ``r1``."""

    kit: RoomKit
    ai: AIChannel
    ws: WebSocketChannel
    provider: MockAIProvider
    human: HumanInputToolHandler | None
    room_id: str = "r1"
    reports: list[ToolCallEvent] = field(default_factory=list)
    """Every ON_TOOL_CALL report, as an ASYNC observer saw it."""
    delivered: list[RoomEvent] = field(default_factory=list)
    """Every event the WebSocket connection received."""

    async def say(self, text: str = "hi", *, sender: str = "alice") -> InboundResult:
        """Send ``text`` from ``sender`` through the WebSocket channel; wait for the observers."""
        result = await self.kit.process_inbound(InboundMessage("ws", sender, TextContent(text)))
        await self.kit.hooks.drain()
        return result

    def read(self, round_no: int = 1) -> list[tuple[str, bool]]:
        """The tool results (content, is_error) the model read on model round ``round_no``."""
        parts = self.provider.calls[round_no].messages[-1].tool_result_parts
        return [(part.content, part.is_error) for part in parts]

    def report(self, call_id: str = "tc-1") -> ToolCallEvent:
        """The one ON_TOOL_CALL report of ``call_id``."""
        found = [event for event in self.reports if event.tool_call_id == call_id]
        assert len(found) == 1, f"{len(found)} reports for {call_id}: {found}"
        return found[0]

    def answer_from_hook(self, answer: str = '{"answer": "blue"}') -> list[Any]:
        """Register a SYNC ON_USER_INPUT_REQUIRED hook that answers each request at once.

        Returns the list the hook appends each event to.
        """
        seen: list[Any] = []
        human = self.human
        assert human is not None

        @self.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
        async def answer_at_once(event: Any, ctx: Any) -> None:
            seen.append(event)
            human.handler.resolve(event.pending_id, answer)

        return seen


Build = Callable[..., Awaitable[Harness]]
"""The ``build`` fixture: ``await build(*responses, human=..., **channel_options)``."""

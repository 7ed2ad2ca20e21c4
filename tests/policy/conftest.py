"""Fixtures for the policy tests: one tool turn on an AI channel, its calls and histories.

They run on the ordinary event loop: the OPA tests talk to a server on loopback, whose
answers take real time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

# The adapters' fixtures: a handler on memory, then on SQLite, and its desk.
from tests.adapters.conftest import desk, handler  # noqa: F401

from roomkit import (
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.policy import tally
from roomkit.providers.ai.base import AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider

PAY = AITool(
    name="pay",
    description="Pay someone.",
    parameters={
        "type": "object",
        "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["to", "amount"],
    },
)


@dataclass
class Turn:
    """What one tool turn came to."""

    human: HumanInputToolHandler
    paid: list[dict[str, Any]]
    """The arguments of every run of ``pay``."""
    read: tuple[str, bool]
    """What the model read of the call (content, is_error)."""
    asked: list[PendingInputEvent] = field(default_factory=list)
    """The requests announced to people."""

    async def histories(self) -> list[list[dict[str, Any]]]:
        """The histories of every request the turn made, oldest first."""
        human = self.human.handler
        settled = await human.list_settled()
        return [await human.history(request.pending_id) for request in settled]

    async def types(self) -> list[str]:
        """The entry types of the turn's one request."""
        (history,) = await self.histories()
        return [entry["type"] for entry in history]

    async def decided(self) -> dict[str, Any]:
        """The turn's one ``policy_decided`` entry."""
        (history,) = await self.histories()
        (entry,) = [entry for entry in history if entry["type"] == "policy_decided"]
        return entry


TurnMaker = Callable[..., Any]


@pytest.fixture(autouse=True)
def fresh_counts() -> None:
    tally.reset()


@pytest.fixture
async def turn() -> AsyncIterator[TurnMaker]:
    """``await turn(human, arguments, answer=None, sender="alice")``: one call of ``pay``
    in the room ``room`` (``r1``).

    ``answer`` decides each request announced (``None``: nobody answers), by ``by`` (its
    first approver when ``None``); ``votes`` instead, ``(by, answer)`` pairs, are cast on it
    one after another.
    """
    kits: list[RoomKit] = []

    async def make(
        human: HumanInputToolHandler,
        arguments: dict[str, Any],
        *,
        answer: str | None = None,
        sender: str = "alice",
        by: str | None = None,
        room: str = "r1",
        votes: Sequence[tuple[str, str]] = (),
    ) -> Turn:
        kit = RoomKit()
        kits.append(kit)
        call = AIToolCall(id="tc-1", name="pay", arguments=arguments)
        provider = MockAIProvider(
            ai_responses=[AIResponse(tool_calls=[call]), AIResponse(content="Done.")]
        )
        paid: list[dict[str, Any]] = []

        async def tools(name: str, given: dict[str, Any]) -> str:
            paid.append(given)
            return f"paid {given['to']}"

        kit.register_channel(
            AIChannel(
                "agent",
                provider=provider,
                system_prompt="You help.",
                human_input_handler=human,
                tool_handler=tools,
                tools=[PAY],
            )
        )
        kit.register_channel(WebSocketChannel("ws"))
        await kit.create_room(room)
        await kit.attach_channel(room, "agent")
        await kit.attach_channel(room, "ws")
        asked: list[PendingInputEvent] = []

        @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
        async def person(event: PendingInputEvent, ctx: Any) -> None:
            asked.append(event)
            for voter, vote in votes:
                await human.handler.aresolve(event.pending_id, vote, by=voter)
            if answer is not None:
                who = by if by is not None else event.approvers[0]
                await human.handler.aresolve(event.pending_id, answer, by=who)

        await kit.process_inbound(InboundMessage("ws", sender, TextContent("pay")))
        await kit.hooks.drain()
        (part,) = provider.calls[1].messages[-1].tool_result_parts
        return Turn(human, paid, (part.content, part.is_error), asked)

    yield make
    for kit in kits:
        await kit.close()

"""A ``CancelledError`` that the model provider, a tool or a hook raises by itself (it awaited
work someone else cancelled) is a failure of that part, not a cancel of the turn: the message
gets its reply, or the caller an error, never silence. A provider that answers with something
other than an ``AIResponse`` is told so."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ai_harness import LOOKUP, Build, round_of, tool_call

from roomkit import HookTrigger, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import ProviderError, ProviderResponseError
from roomkit.providers.ai.base import AIContext, AIResponse
from roomkit.providers.ai.mock import MockAIProvider


async def cancelled_work() -> None:
    """Await work that someone else cancelled: it raises ``CancelledError``."""
    work = asyncio.get_running_loop().create_future()
    work.cancel()
    await work


class CancelledModel(MockAIProvider):
    async def generate(self, context: AIContext) -> AIResponse:
        await cancelled_work()
        raise AssertionError("unreachable")


class JunkModel(MockAIProvider):
    async def generate(self, context: AIContext) -> Any:
        return None


async def ask_agent(model: MockAIProvider) -> None:
    kit = RoomKit()
    kit.register_channel(AIChannel("agent", provider=model))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    try:
        await kit.process_inbound(InboundMessage("ws", "alice", TextContent("hi")), room_id="r1")
    finally:
        await kit.close()


async def test_a_provider_raising_cancelled_error_fails_the_turn_with_a_provider_error() -> None:
    with pytest.raises(ProviderError, match=r"CancelledModel\.generate\(\) raised CancelledError"):
        await ask_agent(CancelledModel())


async def test_a_provider_answering_no_ai_response_is_told_what_it_returned() -> None:
    with pytest.raises(ProviderResponseError, match="must return an AIResponse, got NoneType"):
        await ask_agent(JunkModel())


async def test_a_tool_raising_cancelled_error_fails_the_call_and_the_turn_replies(
    build: Build,
) -> None:
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        await cancelled_work()
        return "never"

    h.ai.tool_handler = lookup

    result = await h.say()

    [(content, is_error)] = h.read()
    assert is_error
    assert json.loads(content) == {"error": "Tool 'lookup' failed (CancelledError)"}
    assert [reply.content.body for reply in result.responses] == ["Done."]


async def test_a_gate_raising_cancelled_error_refuses_the_call_and_the_turn_replies(
    build: Build,
) -> None:
    served: list[str] = []
    h = await build(round_of(tool_call("lookup")), tools=[LOOKUP], human=None)

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        served.append(name)
        return "found"

    h.ai.tool_handler = lookup

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def gate(event: Any, ctx: Any) -> None:
        await cancelled_work()

    result = await h.say()

    [(_, is_error)] = h.read()
    assert is_error
    assert served == []
    assert "CancelledError" in (h.report().error_detail or "")
    assert [reply.content.body for reply in result.responses] == ["Done."]

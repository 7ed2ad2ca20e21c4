"""Whole human-input turns on each vendor: RoomKit + AIChannel + HumanInputToolHandler.

The model (a loopback fake of the vendor's API, driven through the real SDK) asks with
AskUserQuestion; an ON_USER_INPUT_REQUIRED hook answers with ``human.handler.resolve``; the
model reads the answer as the tool result in its next request and its reply lands in the room.
The fakes refuse a tool result that does not answer a call of the previous assistant message,
so a turn that completes also proves the pairing on the wire.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import fake_anthropic as claude_api
import fake_openai as gpt_api
import pytest
from fake_http import Reply
from tests.providers.provider_kit import ASK

from roomkit import (
    AITool,
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomEvent,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.anthropic import AnthropicAIProvider
from roomkit.providers.ai.base import AIProvider
from roomkit.providers.ai.openai import OpenAIAIProvider

FONTS = AITool(
    name="find_fonts",
    description="List fonts for a style.",
    parameters={"type": "object", "properties": {"style": {"type": "string"}}},
)
ANSWER = json.dumps({"answer": "blue"})
REPLY = "Great, a blue logo it is."


@dataclass
class Turn:
    """What one turn left behind."""

    asked: list[PendingInputEvent] = field(default_factory=list)
    room: list[str] = field(default_factory=list)
    served: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


async def run_turn(provider: AIProvider) -> Turn:
    turn = Turn()
    kit = RoomKit()
    human = HumanInputToolHandler(
        tool_names={"AskUserQuestion"}, timeout=300, tool_definitions=[ASK]
    )

    async def find_fonts(name: str, arguments: dict[str, Any]) -> str:
        turn.served.append((name, arguments))
        return json.dumps({"fonts": ["Inter", "Futura"]})

    ai = AIChannel(
        "agent",
        provider=provider,
        system_prompt="You are a designer. Use AskUserQuestion to ask the user.",
        tool_handler=find_fonts,
        tools=[FONTS],
        human_input_handler=human,
    )
    chat = WebSocketChannel("chat")
    kit.register_channel(ai)
    kit.register_channel(chat)

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def person_answers(event: PendingInputEvent, ctx: object) -> None:
        turn.asked.append(event)
        human.handler.resolve(event.pending_id, ANSWER)

    async def show(connection_id: str, event: RoomEvent) -> None:
        turn.room.append(f"[{event.sender_id}] {event.content.body}")

    await kit.create_room("design")
    await kit.attach_channel("design", "agent")
    await kit.attach_channel("design", "chat")
    chat.register_connection("alice-browser", show, room_id="design")
    await kit.process_inbound(
        InboundMessage(
            channel_id="chat", sender_id="alice", content=TextContent("Can you make me a logo?")
        )
    )
    await kit.close()
    return turn


@pytest.fixture
async def providers() -> AsyncIterator[list[AIProvider]]:
    made: list[AIProvider] = []
    yield made
    for provider in made:
        await provider.close()


def anthropic_script(*, stream: bool, parallel: bool) -> list[Reply]:
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("toolu_01", "AskUserQuestion", {"question": "Which colour should the logo be?"})
    ]
    if parallel:
        calls.append(("toolu_02", "find_fonts", {"style": "geometric"}))
    if not stream:
        return [claude_api.message("Let me ask.", tool_uses=calls), claude_api.message(REPLY)]
    fragments = [(i, n, _fragments(json.dumps(a))) for i, n, a in calls]
    return [
        claude_api.streamed(["Let me ", "ask."], tool_uses=fragments),
        claude_api.streamed(["Great, a blue ", "logo it is."]),
    ]


def openai_script(*, stream: bool, parallel: bool) -> list[Reply]:
    calls = [("call_01", "AskUserQuestion", '{"question": "Which colour should the logo be?"}')]
    if parallel:
        calls.append(("call_02", "find_fonts", '{"style": "geometric"}'))
    if not stream:
        return [gpt_api.completion("Let me ask.", calls=calls), gpt_api.completion(REPLY)]
    fragments = [(i, n, _fragments(a)) for i, n, a in calls]
    return [
        gpt_api.streamed(["Let me ", "ask."], calls=fragments),
        gpt_api.streamed(["Great, a blue ", "logo it is."]),
    ]


def _fragments(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def assert_the_person_was_asked_and_the_reply_landed(turn: Turn) -> None:
    [event] = turn.asked
    assert event.tool_name == "AskUserQuestion"
    assert event.arguments == {"question": "Which colour should the logo be?"}
    assert event.actor_id == "alice"
    assert turn.room == [f"[agent] {REPLY}"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_anthropic_turn_asks_the_person_and_continues_with_the_answer(
    anthropic_api: claude_api.FakeAnthropic, providers: list[AIProvider], stream: bool
) -> None:
    anthropic_api.queue(*anthropic_script(stream=stream, parallel=False))
    provider = AnthropicAIProvider(
        model=claude_api.MODEL,
        api_key=claude_api.API_KEY,
        base_url=anthropic_api.url,
        stream=stream,
    )
    providers.append(provider)

    turn = await run_turn(provider)

    assert_the_person_was_asked_and_the_reply_landed(turn)
    first, second = anthropic_api.bodies
    assert first["system"] == "You are a designer. Use AskUserQuestion to ask the user."
    assert {tool["name"] for tool in first["tools"]} == {"AskUserQuestion", "find_fonts"}
    assert second["messages"][-2]["role"] == "assistant"
    assert second["messages"][-1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": ANSWER}],
    }


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_openai_turn_asks_the_person_and_continues_with_the_answer(
    openai_api: gpt_api.FakeOpenAI, providers: list[AIProvider], stream: bool
) -> None:
    openai_api.queue(*openai_script(stream=stream, parallel=False))
    provider = OpenAIAIProvider(
        model=gpt_api.MODEL, api_key=gpt_api.API_KEY, base_url=openai_api.url, stream=stream
    )
    providers.append(provider)

    turn = await run_turn(provider)

    assert_the_person_was_asked_and_the_reply_landed(turn)
    first, second = openai_api.bodies
    assert first["messages"][0]["role"] == "system"
    assert {"role": "user", "content": "Can you make me a logo?", "name": "alice"} in first[
        "messages"
    ]
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_01"
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_01", "content": ANSWER}


async def test_anthropic_parallel_calls_answer_both_in_one_message(
    anthropic_api: claude_api.FakeAnthropic, providers: list[AIProvider]
) -> None:
    anthropic_api.queue(*anthropic_script(stream=True, parallel=True))
    provider = AnthropicAIProvider(
        model=claude_api.MODEL, api_key=claude_api.API_KEY, base_url=anthropic_api.url, stream=True
    )
    providers.append(provider)

    turn = await run_turn(provider)

    assert_the_person_was_asked_and_the_reply_landed(turn)
    assert turn.served == [("find_fonts", {"style": "geometric"})]
    results = anthropic_api.bodies[1]["messages"][-1]["content"]
    assert [(r["tool_use_id"], r["content"]) for r in results] == [
        ("toolu_01", ANSWER),
        ("toolu_02", json.dumps({"fonts": ["Inter", "Futura"]})),
    ]


async def test_openai_parallel_calls_answer_each_in_call_order(
    openai_api: gpt_api.FakeOpenAI, providers: list[AIProvider]
) -> None:
    openai_api.queue(*openai_script(stream=False, parallel=True))
    provider = OpenAIAIProvider(
        model=gpt_api.MODEL, api_key=gpt_api.API_KEY, base_url=openai_api.url
    )
    providers.append(provider)

    turn = await run_turn(provider)

    assert_the_person_was_asked_and_the_reply_landed(turn)
    assert turn.served == [("find_fonts", {"style": "geometric"})]
    tool_messages = [m for m in openai_api.bodies[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("call_01", ANSWER),
        ("call_02", json.dumps({"fonts": ["Inter", "Futura"]})),
    ]

"""The spec's Quick Start code blocks, run as written with their placeholders filled in.

Placeholders: ``MockAIProvider`` stands in for the Anthropic provider, ``my_other_tools`` is an
async tool handler, ``ws_manager`` a small object with an async ``notify``, and the person
answers from outside with ``human.handler.resolve(pending_id, '{"answer": "blue"}')``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from roomkit import (
    HookExecution,
    HookTrigger,
    InboundMessage,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.models.room import RoomEvent
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider

BROADCAST = "*"


class WsManager:
    """The application's WebSocket fan-out: keeps what it was asked to send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.question_pending = asyncio.Event()

    async def notify(self, to: str, message: dict[str, Any]) -> None:
        self.sent.append((to, message))
        self.question_pending.set()


async def my_other_tools(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"tool": name, "ok": True})


def scripted_model() -> MockAIProvider:
    return MockAIProvider(
        ai_responses=[
            AIResponse(
                tool_calls=[
                    AIToolCall(id="tc-1", name="AskUserQuestion", arguments={"question": "Color?"}),
                    AIToolCall(id="tc-2", name="ConfirmAction", arguments={"action": "paint"}),
                ]
            ),
            AIResponse(content="Done."),
        ]
    )


async def test_quick_start_native_ai_channel(caplog: pytest.LogCaptureFixture) -> None:
    provider = scripted_model()
    ws_manager = WsManager()

    # --- the spec's block, as written (provider and placeholders filled in) ---
    from roomkit import AITool, HookExecution, HookTrigger, HumanInputToolHandler, RoomKit
    from roomkit.channels.ai import AIChannel

    kit = RoomKit()

    # Define which tools need human input
    human = HumanInputToolHandler(
        tool_names={"AskUserQuestion", "ConfirmAction"},
        timeout=300,  # 5 minutes
        # A tool the turn does not offer is dropped before any handler sees it.
        # Declare the definition here, or on the channel via `tools=`.
        tool_definitions=[
            AITool(
                name="AskUserQuestion",
                description="Ask the user a question and wait for the answer.",
                parameters={
                    "type": "object",
                    "properties": {"question": {"type": "string"}},
                    "required": ["question"],
                },
            ),
        ],
    )

    ai = AIChannel(
        "agent",
        provider=provider,
        system_prompt="You are a helpful assistant. Use AskUserQuestion to ask the user.",
        tool_handler=my_other_tools,  # Your regular tools
        human_input_handler=human,  # Human-input tools
    )

    kit.register_channel(ai)

    # React when the AI asks for human input
    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def notify_user(event, ctx):  # type: ignore[no-untyped-def]
        # Broadcast to frontend via WebSocket, REST, etc.
        # `actor_id` is who to ask: the participant whose turn raised the request.
        # `None` when the turn had no author — see the note below.
        await ws_manager.notify(
            event.actor_id or BROADCAST,
            {
                "type": "question_pending",
                "pending_id": event.pending_id,
                "tool_name": event.tool_name,
                "arguments": event.arguments,
            },
        )

    # --- the room the turn runs in, and the person answering from outside ---
    ws = WebSocketChannel("ws")
    kit.register_channel(ws)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    await kit.attach_channel("r1", "ws")
    delivered: list[str] = []

    async def send(connection_id: str, event: RoomEvent) -> None:
        delivered.append(event.content.body)

    ws.register_connection("browser", send, room_id="r1")

    async def person() -> bool:
        await ws_manager.question_pending.wait()
        pending_id = ws_manager.sent[0][1]["pending_id"]
        # When the user answers (from your REST endpoint, WebSocket handler, etc.)
        return human.handler.resolve(pending_id, '{"answer": "blue"}')

    answering = asyncio.create_task(person())
    with caplog.at_level(logging.WARNING, logger="roomkit"):
        result = await kit.process_inbound(InboundMessage("ws", "alice", TextContent("Paint")))

    assert await answering is True
    [(to, message)] = ws_manager.sent
    assert to == "alice"
    assert message["type"] == "question_pending"
    assert (message["tool_name"], message["arguments"]) == (
        "AskUserQuestion",
        {"question": "Color?"},
    )
    results = provider.calls[1].messages[-1].tool_result_parts
    assert [(part.content, part.is_error) for part in results] == [
        ('{"answer": "blue"}', False),
        (json.dumps({"error": "Tool 'ConfirmAction' is not declared."}), True),
    ]
    assert [reply.content.body for reply in result.responses] == ["Done."]
    assert delivered == ["Done."]
    # The hook returns None: that allows, silently. The one warning is about ConfirmAction,
    # which the block names in tool_names but never declares.
    warnings = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert [record.name for record in warnings] == [
        "roomkit.tools.human_input",
        "roomkit.channels.ai",
    ]
    assert "['ConfirmAction'] but never offers them" in warnings[0].getMessage()
    assert warnings[1].getMessage() == "Provider requested undeclared tool ConfirmAction"
    await kit.close()


async def test_quick_start_external_provider() -> None:
    # --- the spec's block, as written, inside an ExternalToolHandler subclass ---
    from roomkit import HumanInputRejectedError
    from roomkit.tools import ExternalToolHandler, ToolDecision
    from roomkit.tools.human_input import HumanInputHandler

    handler = HumanInputHandler()

    class ClaudeCodeTools(ExternalToolHandler):
        # Inside your ExternalToolHandler.process_tool_call():
        async def process_tool_call(self, tool_name, tool_input, *, room_id=None, **kw):  # type: ignore[no-untyped-def, override]
            if tool_name == "AskUserQuestion":
                pending = await handler.create(
                    tool_name,
                    tool_input,
                    room_id=room_id or "",
                    tool_call_id=kw.get("tool_call_id", ""),
                    channel_id=self._channel_id,
                )
                # ON_USER_INPUT_REQUIRED hook fires via _on_input_required callback
                try:
                    result = await handler.wait(pending.pending_id, timeout=300)
                except HumanInputRejectedError as rejected:
                    # A refusal: the model reads why.
                    return ToolDecision(approved=False, reason=f"Rejected: {rejected}")
                return ToolDecision(approved=False, reason=result)
            return ToolDecision(approved=True)

        async def on_tool_result(self, tool_name, tool_input, result, **kw):  # type: ignore[no-untyped-def, override]
            await self._fire_on_tool_hook(
                tool_name,
                tool_input,
                result,
                tool_call_id=kw.get("tool_call_id", ""),
                room_id=kw.get("room_id"),
            )

    # --- the kit around it ---
    provider = MockAIProvider(
        ai_responses=[
            AIResponse(
                content="Painting.",
                tool_calls=[
                    AIToolCall(id="tc-1", name="AskUserQuestion", arguments={"q": "Color?"}),
                    AIToolCall(id="tc-2", name="Bash", arguments={"cmd": "ls"}),
                ],
            ),
            AIResponse(content="Done."),
        ]
    )
    kit = RoomKit()
    tools = ClaudeCodeTools()
    kit.register_channel(AIChannel("agent", provider=provider, external_tool_handler=tools))
    kit.register_channel(WebSocketChannel("ws"))
    kit.route_human_input(handler, "agent")
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    await kit.attach_channel("r1", "ws")
    asked: list[Any] = []
    reports: list[Any] = []

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def notify(event, ctx):  # type: ignore[no-untyped-def]
        asked.append(event)
        # When user answers:
        answer_json = '{"answer": "blue"}'
        handler.resolve(event.pending_id, answer_json)

    @kit.hook(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
    async def observe(event, ctx):  # type: ignore[no-untyped-def]
        reports.append(event)

    result = await kit.process_inbound(InboundMessage("ws", "alice", TextContent("Paint")))
    await kit.hooks.drain()

    [event] = asked
    assert (event.tool_name, event.channel_id, event.room_id) == ("AskUserQuestion", "agent", "r1")
    # The block passes no actor_id to create(): a caller driving its own loop did not supply one.
    assert (event.tool_call_id, event.actor_id) == ("tc-1", None)
    # The provider runs both calls itself: no model round follows, its text is the reply.
    assert len(provider.calls) == 1
    assert [reply.content.body for reply in result.responses] == ["Painting."]
    # As written, the block returns the answer as a refusal reason: the provider reads it as
    # an error (ToolDecision(approved=True, result=answer) hands it back as a success).
    assert sorted((r.tool_call_id, r.outcome, r.result) for r in reports) == [
        ("tc-1", "refused", json.dumps({"error": '{"answer": "blue"}'})),
        ("tc-2", "served", ""),
    ]
    await kit.close()


async def test_quick_start_external_provider_reads_a_rejection() -> None:
    from roomkit import HumanInputRejectedError
    from roomkit.tools import ExternalToolHandler, ToolDecision
    from roomkit.tools.human_input import HumanInputHandler

    handler = HumanInputHandler()

    class ClaudeCodeTools(ExternalToolHandler):
        async def process_tool_call(self, tool_name, tool_input, *, room_id=None, **kw):  # type: ignore[no-untyped-def, override]
            pending = await handler.create(
                tool_name,
                tool_input,
                room_id=room_id or "",
                tool_call_id=kw.get("tool_call_id", ""),
                channel_id=self._channel_id,
            )
            try:
                result = await handler.wait(pending.pending_id, timeout=300)
            except HumanInputRejectedError as rejected:
                return ToolDecision(approved=False, reason=f"Rejected: {rejected}")
            return ToolDecision(approved=True, result=result)

        async def on_tool_result(self, tool_name, tool_input, result, **kw):  # type: ignore[no-untyped-def, override]
            pass

    provider = MockAIProvider(
        ai_responses=[
            AIResponse(tool_calls=[AIToolCall(id="tc-1", name="AskUserQuestion")]),
            AIResponse(content="Done."),
        ]
    )
    kit = RoomKit()
    kit.register_channel(
        AIChannel("agent", provider=provider, external_tool_handler=ClaudeCodeTools())
    )
    kit.register_channel(WebSocketChannel("ws"))
    kit.route_human_input(handler, "agent")
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    await kit.attach_channel("r1", "ws")

    reports: list[Any] = []

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def notify(event, ctx):  # type: ignore[no-untyped-def]
        handler.reject(event.pending_id, "user declined")

    @kit.hook(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
    async def observe(event, ctx):  # type: ignore[no-untyped-def]
        reports.append(event)

    await kit.process_inbound(InboundMessage("ws", "alice", TextContent("Paint")))
    await kit.hooks.drain()

    # The provider reads the refusal itself: no model round follows.
    assert len(provider.calls) == 1
    [report] = reports
    assert (report.result, report.is_error, report.refused) == (
        json.dumps({"error": "Rejected: user declined"}),
        True,
        True,
    )
    await kit.close()

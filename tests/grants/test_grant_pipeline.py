"""A held tool on the AI channel: after a person grants the same again, the same call runs
without anyone being told of it, and its chain says why."""

from __future__ import annotations

from typing import Any

from roomkit import (
    Approval,
    HookTrigger,
    HumanInputToolHandler,
    InboundMessage,
    PendingInputEvent,
    RoomKit,
    TextContent,
    WebSocketChannel,
)
from roomkit.channels.ai import AIChannel
from roomkit.policy import Allow, PolicyCall
from roomkit.policy.grants import GrantScope, approve_and_grant
from roomkit.providers.ai.base import AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider

SEND = AITool(
    name="send_email",
    description="Send an email.",
    parameters={
        "type": "object",
        "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
        "required": ["to", "body"],
        "additionalProperties": False,
    },
)
MAIL = {"to": "bob@example.com", "body": "hi"}
ASK = AITool(
    name="Ask",
    description="Ask the user a question.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)


def _round(call_id: str, arguments: dict[str, Any]) -> list[AIResponse]:
    call = AIToolCall(id=call_id, name="send_email", arguments=arguments)
    return [AIResponse(tool_calls=[call]), AIResponse(content="Done.")]


async def test_a_granted_call_runs_unasked_and_its_chain_says_why() -> None:
    sent: list[dict[str, Any]] = []

    async def outbox(name: str, arguments: dict[str, Any]) -> str:
        sent.append(arguments)
        return f"sent to {arguments['to']}"

    human = HumanInputToolHandler(
        {"Ask"}, tool_definitions=[ASK], approvals={"send_email": Approval(approvers=["ann"])}
    )
    responses = [
        *_round("tc-1", MAIL),
        *_round("tc-2", MAIL),
        *_round("tc-3", {**MAIL, "body": "hello"}),
    ]
    provider = MockAIProvider(ai_responses=responses)
    kit = RoomKit()
    ai = AIChannel(
        "agent",
        provider=provider,
        human_input_handler=human,
        tools=[SEND],
        tool_handler=outbox,
    )
    kit.register_channel(ai)
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    await kit.attach_channel("r1", "ws")
    asked: list[PendingInputEvent] = []
    handler = human.handler

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def person(event: PendingInputEvent, ctx: Any) -> None:
        asked.append(event)
        if len(asked) == 1:
            scope = GrantScope(expires_in=3600, for_actor=False, for_room=True)
            await approve_and_grant(handler, event.pending_id, scope, by="ann")
        else:
            await handler.aresolve(event.pending_id, '{"decision":"approve"}', by="ann")

    try:
        for _ in range(3):
            await kit.process_inbound(InboundMessage("ws", "alice", TextContent("send it")))
            await kit.hooks.drain()
    finally:
        await kit.close()
    assert sent == [MAIL, MAIL, {**MAIL, "body": "hello"}]
    # Asked for the first call and for the one outside the grant; not for the second.
    assert [event.arguments for event in asked] == [MAIL, {**MAIL, "body": "hello"}]
    granted = [r for r in await handler.list_settled() if r.settled_by.startswith("grant:")]
    assert len(granted) == 1
    history = await handler.history(granted[0].pending_id)
    types = [entry["type"] for entry in history]
    assert types == ["created", "grant_used", "decided", "settled", "executed"]
    assert history[1]["source"] == asked[0].pending_id


class Watching:
    """A shadow policy: it allows every call, and only its record counts."""

    name = "watching"
    shadow = True

    def decide(self, call: PolicyCall) -> Allow:
        return Allow()


async def test_a_call_nobody_is_asked_about_spends_no_grant() -> None:
    """A grant spares a person a question: a call that asks nobody (the rule's ``when=``
    says no, the shadow policy only watches) neither uses the grant nor is settled by it."""
    sent: list[dict[str, Any]] = []
    held: list[str] = []

    async def outbox(name: str, arguments: dict[str, Any]) -> str:
        sent.append(arguments)
        return f"sent to {arguments['to']}"

    def first_only(name: str, arguments: dict[str, Any]) -> bool:
        held.append(name)
        return len(held) == 1

    rule = Approval(approvers=["ann"], when=first_only, policy=Watching())
    human = HumanInputToolHandler({"Ask"}, tool_definitions=[ASK], approvals={"send_email": rule})
    provider = MockAIProvider(ai_responses=[*_round("tc-1", MAIL), *_round("tc-2", MAIL)])
    kit = RoomKit()
    kit.register_channel(
        AIChannel(
            "agent", provider=provider, human_input_handler=human, tools=[SEND], tool_handler=outbox
        )
    )
    kit.register_channel(WebSocketChannel("ws"))
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    await kit.attach_channel("r1", "ws")
    handler = human.handler

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def person(event: PendingInputEvent, ctx: Any) -> None:
        scope = GrantScope(expires_in=3600, for_actor=False, for_room=True)
        await approve_and_grant(handler, event.pending_id, scope, by="ann")

    try:
        for _ in range(2):
            await kit.process_inbound(InboundMessage("ws", "alice", TextContent("send it")))
            await kit.hooks.drain()
        grants = await handler.grants.list(tool="send_email")
    finally:
        await kit.close()
    assert sent == [MAIL, MAIL]  # asked and approved, then run unasked
    assert [grant.uses for grant in grants] == [0]
    settled = await handler.list_settled()
    assert len(settled) == 2
    assert not [r for r in settled if (r.settled_by or "").startswith("grant:")]
    for request in settled:
        types = [entry["type"] for entry in await handler.history(request.pending_id)]
        assert "grant_used" not in types

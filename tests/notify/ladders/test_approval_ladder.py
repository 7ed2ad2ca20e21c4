"""A ladder reaches approvals: a held call left waiting is reminded, then escalated, on the
virtual clock, through an AI channel with a scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.notify.recorder import Recorder

from roomkit import Approval, InboundMessage, RoomKit, TextContent, WebSocketChannel
from roomkit.channels.ai import AIChannel
from roomkit.models.room import RoomEvent
from roomkit.notify import Directory, Ladder, Notifier, Person, default, escalate, remind
from roomkit.providers.ai.base import AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler

SEND = AITool(
    name="send_email",
    description="Send an email.",
    parameters={
        "type": "object",
        "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
        "required": ["to", "body"],
    },
)
MAIL = {"to": "carol@example.com", "body": "hi"}
PEOPLE = Directory({"alice": Person(email="alice@example.com", manager="bob")})
STEPS = ["question_pending", "question_reminder", "question_escalated", "question_settled"]


class Mailer:
    """The host's tool handler: keeps every email it sends."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.sent.append(arguments)
        return f"sent to {arguments['to']}"


async def agent(human: HumanInputToolHandler, mailer: Mailer) -> RoomKit:
    """A kit whose agent calls ``send_email`` once, then says it is done."""
    kit = RoomKit()
    call = AIToolCall(id="tc-1", name="send_email", arguments=dict(MAIL))
    provider = MockAIProvider(
        ai_responses=[AIResponse(tool_calls=[call]), AIResponse(content="Done.")]
    )
    kit.register_channel(
        AIChannel(
            "agent",
            provider=provider,
            human_input_handler=human,
            tools=[SEND],
            tool_handler=mailer,
        )
    )
    ws = WebSocketChannel("ws")
    kit.register_channel(ws)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "agent")
    await kit.attach_channel("r1", "ws")

    async def deliver(connection_id: str, event: RoomEvent) -> None:
        return None

    ws.register_connection("c1", deliver, room_id="r1")
    return kit


def settled_or(count: int) -> Any:
    """Until ``count`` notices were sent, or the request's ending was."""
    return lambda seen: len(seen) >= count or ("question_settled", "alice") in seen


def in_order(seen: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    return sorted(seen, key=lambda step: (STEPS.index(step[0]), step[1] or ""))


async def test_an_approval_left_waiting_is_reminded_escalated_and_decided_by_the_manager() -> None:
    handler = HumanInputHandler()
    human = HumanInputToolHandler(
        {"Ask"},
        timeout=1800,
        handler=handler,
        approvals={"send_email": Approval()},
        ladder=Ladder(remind(after=300), escalate(after=900, to="manager")),
    )
    mailer, recorder = Mailer(), Recorder()
    kit = await agent(human, mailer)
    try:
        async with Notifier(handler, [recorder], directory=PEOPLE):
            turn = asyncio.create_task(
                kit.process_inbound(InboundMessage("ws", "alice", TextContent("mail carol")))
            )
            await recorder.wait_until(settled_or(4))
            assert in_order(recorder.seen()) == [
                ("question_pending", "alice"),
                ("question_reminder", "alice"),
                ("question_escalated", "alice"),
                ("question_escalated", "bob"),
            ]
            [request] = await handler.list_pending()
            assert (request.kind, request.approvers) == ("approval", ("alice", "bob"))
            assert mailer.sent == []
            assert await handler.aresolve(request.pending_id, approve(), by="bob", surface="desk")
            await turn
            await recorder.wait_until(lambda seen: len(seen) == 6)
    finally:
        await kit.close()
    assert mailer.sent == [MAIL]
    assert in_order(recorder.seen()) == [
        ("question_pending", "alice"),
        ("question_reminder", "alice"),
        ("question_escalated", "alice"),
        ("question_escalated", "bob"),
        ("question_settled", "alice"),
        ("question_settled", "bob"),
    ]
    history = await handler.history(request.pending_id)
    assert [entry["type"] for entry in history if entry["type"] != "shown"] == [
        "created",
        "escalated",
        "decided",
        "settled",
        "executed",
    ]
    [escalated] = [entry for entry in history if entry["type"] == "escalated"]
    assert (escalated["approvers"], escalated["surface"]) == (["bob"], "ladder")


async def test_an_approval_ends_by_its_rule_after_the_ladder_ran() -> None:
    """The ladder reminds; the approval's own timeout and on_expiry end it."""
    handler = HumanInputHandler()
    human = HumanInputToolHandler(
        {"Ask"},
        timeout=1800,
        handler=handler,
        approvals={"send_email": Approval(timeout=600)},
        ladder=Ladder(remind(after=300)),
    )
    mailer, recorder = Mailer(), Recorder()
    kit = await agent(human, mailer)
    try:
        async with Notifier(handler, [recorder], directory=PEOPLE):
            await kit.process_inbound(InboundMessage("ws", "alice", TextContent("mail carol")))
            await recorder.wait_until(settled_or(3))
    finally:
        await kit.close()
    assert mailer.sent == []
    assert recorder.seen() == [
        ("question_pending", "alice"),
        ("question_reminder", "alice"),
        ("question_settled", "alice"),
    ]
    assert recorder.notices[-1].outcome == "timed_out"


@pytest.mark.parametrize("step", [remind(after=600), escalate(after=900)])
def test_a_step_at_or_past_a_held_tools_timeout_is_refused(step: Any) -> None:
    with pytest.raises(ValueError, match=r"approvals\['send_email'\]: .* past the 600s timeout"):
        HumanInputToolHandler(
            {"Ask"},
            timeout=1800,
            approvals={"send_email": Approval(timeout=600)},
            ladder=Ladder(step),
        )


def test_a_ladder_ending_questions_is_still_refused_with_approvals() -> None:
    with pytest.raises(ValueError, match=r"give held tools Approval\(on_expiry=\.\.\.\)"):
        HumanInputToolHandler(
            {"Ask"},
            approvals={"send_email"},
            ladder=Ladder(remind(after=10), on_expiry=default("no")),
        )

"""Approvals on the AI channel: a held tool runs only as a person decided, once."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from ai_harness import ASK, Build, round_of, tool_call

from roomkit import (
    Approval,
    HookResult,
    HookTrigger,
    HumanInputHandler,
    HumanInputToolHandler,
    PendingInputEvent,
)
from roomkit.providers.ai.base import AITool
from roomkit.tools.approvals import approve, edit, reject, respond

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED
BEFORE = HookTrigger.BEFORE_TOOL_USE

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


def human(approvals: Any = None, **options: Any) -> HumanInputToolHandler:
    return HumanInputToolHandler(
        {"Ask"},
        tool_definitions=[ASK],
        approvals={"send_email": Approval()} if approvals is None else approvals,
        **options,
    )


class Outbox:
    """The host's tool handler: records every email it sends."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.sent.append(arguments)
        return f"sent to {arguments['to']}"


async def held_build(build: Build, decision: str | None, **options: Any) -> Any:
    outbox = Outbox()
    rule_handler = options.pop("human", None) or human()
    h = await build(
        round_of(tool_call("send_email", MAIL)),
        human=rule_handler,
        tools=[SEND],
        tool_handler=outbox,
    )
    seen: list[PendingInputEvent] = []

    @h.kit.hook(INPUT)
    async def decide(event: PendingInputEvent, ctx: Any) -> None:
        seen.append(event)
        if decision is not None:
            await rule_handler.handler.aresolve(event.pending_id, decision, by="alice")

    return h, outbox, seen


async def test_an_approved_call_runs_once_with_the_arguments_shown(build: Build) -> None:
    h, outbox, seen = await held_build(build, approve())
    await h.say()
    assert outbox.sent == [MAIL]
    assert h.read() == [("sent to bob@example.com", False)]
    (event,) = seen
    assert (event.kind, event.tool_name, event.arguments) == ("approval", "send_email", MAIL)
    assert event.approvers == ("alice",)
    assert event.arguments_digest is not None
    types = [entry["type"] for entry in await h.human.handler.history(event.pending_id)]
    assert types == ["created", "decided", "settled", "executed"]


async def test_an_edit_runs_the_replacement_and_the_model_reads_what_changed(
    build: Build,
) -> None:
    h, outbox, _ = await held_build(build, edit({"to": "carol@example.com", "body": "hi"}))
    await h.say()
    assert outbox.sent == [{"to": "carol@example.com", "body": "hi"}]
    ((content, is_error),) = h.read()
    read = json.loads(content)
    assert not is_error
    assert read["result"] == "sent to carol@example.com"
    assert read["changed"] == {"to": {"from": "bob@example.com", "to": "carol@example.com"}}
    assert h.report().arguments == {"to": "carol@example.com", "body": "hi"}


async def test_a_rejection_never_runs_and_the_model_reads_the_reason(build: Build) -> None:
    h, outbox, _ = await held_build(build, reject("not to that address"))
    await h.say()
    assert outbox.sent == []
    ((content, is_error),) = h.read()
    assert is_error
    assert "not to that address" in content
    assert "declined" in content
    assert h.report().refused


async def test_a_response_never_runs_and_reads_as_a_persons_answer(build: Build) -> None:
    h, outbox, _ = await held_build(build, respond("I sent it by hand"))
    await h.say()
    assert outbox.sent == []
    ((content, is_error),) = h.read()
    assert not is_error
    assert json.loads(content)["result"] == "I sent it by hand"
    assert json.loads(content)["source"] == "person"


async def test_expiry_denies_by_default_and_reads_unlike_a_rejection(build: Build) -> None:
    h, outbox, _ = await held_build(build, None, human=human({"send_email": Approval(timeout=5)}))
    await h.say()
    assert outbox.sent == []
    ((content, is_error),) = h.read()
    assert is_error
    assert "expired" in content
    assert "A person declined" not in content


async def test_expiry_may_approve_when_the_rule_says_so(build: Build) -> None:
    rule = Approval(timeout=5, on_expiry="approve")
    h, outbox, _ = await held_build(build, None, human=human({"send_email": rule}))
    await h.say()
    assert outbox.sent == [MAIL]


async def test_when_says_no_and_the_call_runs_unheld(build: Build) -> None:
    async def never(name: str, arguments: dict[str, Any]) -> bool:
        return False

    h, outbox, seen = await held_build(
        build, None, human=human({"send_email": Approval(when=never)})
    )
    await h.say()
    assert outbox.sent == [MAIL]
    assert seen == []


async def test_a_when_that_raises_asks_a_person(build: Build) -> None:
    def broken(name: str, arguments: dict[str, Any]) -> bool:
        raise RuntimeError("bug")

    h, outbox, seen = await held_build(
        build, approve(), human=human({"send_email": Approval(when=broken)})
    )
    await h.say()
    assert len(seen) == 1
    assert outbox.sent == [MAIL]


async def test_the_gate_runs_before_the_hold_and_its_rewrite_is_what_is_held(
    build: Build,
) -> None:
    h, outbox, seen = await held_build(build, approve())

    @h.kit.hook(BEFORE)
    async def rewrite(event: Any, ctx: Any) -> HookResult:
        return HookResult(action="allow", metadata={"arguments": {"to": "x@y", "body": "b"}})

    await h.say()
    assert seen[0].arguments == {"to": "x@y", "body": "b"}
    assert outbox.sent == [{"to": "x@y", "body": "b"}]


async def test_arguments_changed_after_the_hold_are_refused_at_dispatch(build: Build) -> None:
    outbox = Outbox()
    rules = human()
    h = await build(
        round_of(tool_call("send_email", MAIL)), human=rules, tools=[SEND], tool_handler=outbox
    )

    @h.kit.hook(INPUT)
    async def tamper(event: PendingInputEvent, ctx: Any) -> None:
        # The event's arguments are a copy: the tamper goes through the held request itself.
        rules.handler.pending[event.pending_id].arguments["to"] = "mallory@example.com"
        await rules.handler.aresolve(event.pending_id, approve(), by="alice")

    await h.say()
    assert outbox.sent == []
    ((content, is_error),) = h.read()
    assert is_error
    assert "not the ones a person approved" in content
    assert "ApprovalMismatch" in (h.report().error_detail or "")


async def test_a_run_whose_history_is_gone_still_counts(
    build: Build, caplog: pytest.LogCaptureFixture
) -> None:
    """Without a retention the memory store forgets the approval once its wait returns:
    the run is logged instead of recorded, and the model still reads its result."""
    rules = human(handler=HumanInputHandler(retention=0))
    h, outbox, _ = await held_build(build, approve(), human=rules)
    with caplog.at_level(logging.WARNING, logger="roomkit.channels.calls"):
        await h.say()
    assert outbox.sent == [MAIL]
    assert h.read() == [("sent to bob@example.com", False)]
    assert "was not recorded: its history is gone" in caplog.text

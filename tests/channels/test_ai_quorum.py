"""Quorum approvals on the AI channel: the held call runs once enough approvers agree, with
the arguments they agreed on, and the model reads who approved or who declined and why."""

from __future__ import annotations

import json
from typing import Any

from ai_harness import ASK, Build, round_of, tool_call

from roomkit import Approval, HookTrigger, HumanInputToolHandler, PendingInputEvent, Quorum
from roomkit.providers.ai.base import AITool
from roomkit.tools.approvals import approve, edit, reject

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED

PAY = AITool(
    name="pay",
    description="Pay an invoice.",
    parameters={
        "type": "object",
        "properties": {"to": {"type": "string"}, "amount": {"type": "integer"}},
        "required": ["to", "amount"],
        "additionalProperties": False,
    },
)
INVOICE = {"to": "acme", "amount": 900}
FINANCE = ["alice", "bob", "carol"]


async def voted_build(
    build: Build, votes: list[tuple[str, str]], *, veto: bool = True
) -> tuple[Any, list[dict[str, Any]]]:
    """A turn that calls ``pay``, held for two of the finance team, who cast ``votes``."""
    paid: list[dict[str, Any]] = []

    async def pay(name: str, arguments: dict[str, Any]) -> str:
        paid.append(arguments)
        return f"paid {arguments['amount']} to {arguments['to']}"

    rule = Approval(approvers=Quorum(2, of=FINANCE), veto=veto)
    human = HumanInputToolHandler({"Ask"}, tool_definitions=[ASK], approvals={"pay": rule})
    h = await build(round_of(tool_call("pay", INVOICE)), human=human, tools=[PAY], tool_handler=pay)

    @h.kit.hook(INPUT)
    async def vote(event: PendingInputEvent, ctx: Any) -> None:
        assert event.approvers == tuple(FINANCE)
        for actor, decision in votes:
            assert await human.handler.aresolve(event.pending_id, decision, by=actor)

    return h, paid


async def test_the_call_runs_once_two_approve_and_the_model_reads_who(build: Build) -> None:
    h, paid = await voted_build(build, [("alice", approve()), ("carol", approve())])
    await h.say()
    assert paid == [INVOICE]
    ((content, is_error),) = h.read()
    read = json.loads(content)
    assert not is_error
    assert read["result"] == "paid 900 to acme"
    assert read["approved_by"] == ["alice", "carol"]
    assert read["arguments"] == INVOICE
    assert "changed" not in read


async def test_an_edit_restarts_the_count_and_the_edited_arguments_run(build: Build) -> None:
    lower = {"to": "acme", "amount": 500}
    h, paid = await voted_build(
        build, [("alice", approve()), ("bob", edit(lower)), ("alice", approve())]
    )
    await h.say()
    assert paid == [lower]
    read = json.loads(h.read()[0][0])
    assert read["approved_by"] == ["bob", "alice"]
    assert read["changed"] == {"amount": {"from": 900, "to": 500}}
    assert h.report().arguments == lower


async def test_one_rejection_vetoes_and_the_model_reads_who_and_why(build: Build) -> None:
    h, paid = await voted_build(build, [("alice", approve()), ("bob", reject("over budget"))])
    await h.say()
    assert paid == []
    ((content, is_error),) = h.read()
    assert is_error
    read = json.loads(content)
    assert "bob declined" in read["error"]
    assert read["reason"] == "bob: over budget"
    assert h.report().refused


async def test_without_a_veto_the_call_is_refused_once_approval_is_out_of_reach(
    build: Build,
) -> None:
    votes = [("alice", reject("too much")), ("bob", reject(""))]
    h, paid = await voted_build(build, votes, veto=False)
    await h.say()
    assert paid == []
    read = json.loads(h.read()[0][0])
    assert "alice, bob declined" in read["error"]
    assert read["reason"] == "alice: too much; bob: none given"

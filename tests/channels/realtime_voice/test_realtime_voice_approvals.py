"""Approvals on every door of a call: raised and decided like a question, under their own
timeout rather than the call's 10 s bound."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.channels.ai_harness import ASK
from tests.channels.realtime_voice.voice_harness import DOORS, MakeVoice

from roomkit import AITool, Approval, HumanInputToolHandler
from roomkit.testing import advance
from roomkit.tools.approvals import approve, edit, reject

TRANSFER = AITool(
    name="transfer",
    description="Move money.",
    parameters={
        "type": "object",
        "properties": {"amount": {"type": "integer"}},
        "required": ["amount"],
    },
)


class Bank:
    def __init__(self) -> None:
        self.moved: list[dict[str, Any]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.moved.append(arguments)
        return f"moved {arguments['amount']}"


def held(**rule: Any) -> HumanInputToolHandler:
    return HumanInputToolHandler(
        {"Ask"}, tool_definitions=[ASK], approvals={"transfer": Approval(**rule)}
    )


@pytest.mark.parametrize("door_id", sorted(DOORS))
async def test_an_approval_on_a_call_waits_past_the_call_bound(
    make: MakeVoice, door_id: str
) -> None:
    bank = Bank()
    human = held(timeout=120)
    h = await make(human=human, tools=[TRANSFER], tool_handler=bank)
    door = DOORS[door_id]()
    await door.call(h, "c1", "transfer", {"amount": 5})
    event = await h.questions.get()
    assert (event.kind, event.tool_name, event.arguments) == ("approval", "transfer", {"amount": 5})
    assert event.approvers == ("alice",)
    await advance(60)  # far past the call's 10 s bound, within the approval's 120 s
    assert await human.handler.aresolve(event.pending_id, approve(), by="alice")
    assert await door.result(h, "c1") == "moved 5"
    await door.finish(h)
    assert bank.moved == [{"amount": 5}]


@pytest.mark.parametrize(
    ("decision", "moved", "reads"),
    [
        (edit({"amount": 3}), [{"amount": 3}], '"changed"'),
        (reject("not today"), [], "not today"),
    ],
    ids=["edit", "reject"],
)
async def test_a_decision_on_a_call(
    make: MakeVoice, decision: str, moved: list[Any], reads: str
) -> None:
    bank = Bank()
    human = held()
    h = await make(human=human, tools=[TRANSFER], tool_handler=bank)
    await h.provider.simulate_tool_call(h.session, "call-1", "transfer", {"amount": 5})
    event = await h.questions.get()
    await human.handler.aresolve(event.pending_id, decision, by="alice")
    assert reads in await h.provider.wait_for_tool_result("call-1")
    assert bank.moved == moved


async def test_an_approval_nobody_decides_expires_under_its_own_timeout(
    make: MakeVoice,
) -> None:
    bank = Bank()
    h = await make(human=held(timeout=30), tools=[TRANSFER], tool_handler=bank)
    await h.provider.simulate_tool_call(h.session, "call-1", "transfer", {"amount": 5})
    result = json.loads(await h.provider.wait_for_tool_result("call-1"))
    assert "expired" in result["error"]
    assert bank.moved == []

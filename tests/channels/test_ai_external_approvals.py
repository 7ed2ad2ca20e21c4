"""Approvals on the external path: a call the provider runs is held for a person first."""

from __future__ import annotations

from typing import Any

import pytest
from ai_harness import ASK, Build, round_of, tool_call

from roomkit import HookTrigger, HumanInputToolHandler, PendingInputEvent
from roomkit.tools import PolicyExternalToolHandler
from roomkit.tools.approvals import approve, edit, reject, respond

INPUT = HookTrigger.ON_USER_INPUT_REQUIRED


@pytest.mark.parametrize(
    ("decision", "arguments", "refused", "result"),
    [
        (approve(), {"cmd": "ls"}, False, ""),
        (edit({"cmd": "ls -l"}), {"cmd": "ls -l"}, False, ""),
        (reject("not here"), {"cmd": "ls"}, True, None),
        (respond("nothing to list"), {"cmd": "ls"}, False, "nothing to list"),
    ],
    ids=["approve", "edit", "reject", "respond"],
)
async def test_the_provider_runs_only_what_a_person_decided(
    build: Build, decision: str, arguments: dict[str, Any], refused: bool, result: str | None
) -> None:
    human = HumanInputToolHandler({"Ask"}, tool_definitions=[ASK], approvals={"Bash"})
    h = await build(
        round_of(tool_call("Bash", {"cmd": "ls"})),
        human=human,
        external_tool_handler=PolicyExternalToolHandler(),
    )
    seen: list[PendingInputEvent] = []

    @h.kit.hook(INPUT)
    async def decide(event: PendingInputEvent, ctx: Any) -> None:
        seen.append(event)
        await human.handler.aresolve(event.pending_id, decision, by="alice")

    await h.say()
    report = h.report()
    assert [event.kind for event in seen] == ["approval"]
    assert report.refused is refused
    assert report.arguments == arguments
    if result is not None:
        assert result in str(report.result)
    history = [entry["type"] for entry in await human.handler.history(seen[0].pending_id)]
    ran = decision in (approve(), edit({"cmd": "ls -l"}))
    assert history == ["created", "decided", "settled", *(["executed"] if ran else [])]

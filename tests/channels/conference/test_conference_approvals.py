"""Approvals in a conference: the participant who spoke decides the held call."""

from __future__ import annotations

from typing import Any

from tests.channels.conference.conference_harness import MakeConference
from tests.channels.realtime_harness import ASK

from roomkit import AITool, Approval, ChannelType, HumanInputToolHandler
from roomkit.testing import advance
from roomkit.tools.approvals import approve, respond

OPEN_DOOR = AITool(
    name="open_door",
    description="Open the front door.",
    parameters={"type": "object", "properties": {"door": {"type": "string"}}},
)


async def test_a_held_call_runs_once_its_speaker_approves(make: MakeConference) -> None:
    opened: list[dict[str, Any]] = []

    async def doors(name: str, arguments: dict[str, Any]) -> str:
        opened.append(arguments)
        return "opened"

    human = HumanInputToolHandler(
        {"Ask"}, tool_definitions=[ASK], approvals={"open_door": Approval(timeout=100)}
    )
    h = await make(human=human, tools=[OPEN_DOOR], tool_handler=doors)
    await h.speak("bob")
    await h.call("call-1", "open_door", {"door": "front"})
    event = await h.questions.get()
    assert (event.kind, event.channel_type, event.approvers) == (
        "approval",
        ChannelType.CONFERENCE,
        ("bob",),
    )
    await advance(30)
    assert await human.handler.aresolve(event.pending_id, approve(), by="bob")
    assert await h.provider.wait_for_tool_result("call-1") == "opened"
    assert opened == [{"door": "front"}]


async def test_a_response_in_a_conference_never_runs_the_tool(make: MakeConference) -> None:
    async def doors(name: str, arguments: dict[str, Any]) -> str:
        raise AssertionError("the door must not open")

    human = HumanInputToolHandler({"Ask"}, tool_definitions=[ASK], approvals={"open_door"})
    h = await make(human=human, tools=[OPEN_DOOR], tool_handler=doors)
    await h.speak("alice")
    await h.call("call-1", "open_door", {"door": "back"})
    event = await h.questions.get()
    await human.handler.aresolve(event.pending_id, respond("it is open already"), by="alice")
    assert "it is open already" in await h.provider.wait_for_tool_result("call-1")
    report = await h.report("open_door")
    assert not report.is_error

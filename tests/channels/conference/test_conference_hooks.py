"""BEFORE_TOOL_USE and ON_TOOL_CALL on a conference's calls: the voice channel's gate and report."""

from __future__ import annotations

from typing import Any

from tests.channels.conference.conference_harness import MakeConference
from tests.channels.realtime_harness import ANSWER, body

from roomkit import ChannelType, HookResult, HookTrigger, PendingInputEvent, ToolCallEvent

CONFERENCE = ChannelType.CONFERENCE


async def test_a_blocking_gate_refuses_the_call_before_anyone_is_asked(
    make: MakeConference,
) -> None:
    h = await make()
    seen: list[ToolCallEvent] = []

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def gatekeeper(event: ToolCallEvent, ctx: Any) -> HookResult:
        seen.append(event)
        return HookResult.block("not in this meeting")

    session = await h.speak("alice")
    await h.call("call-1", "Ask", {"question": "Color?"})

    assert await h.provider.wait_for_tool_result("call-1") == body("not in this meeting")
    assert h.questions.empty()
    [event] = seen
    assert (event.channel_type, event.channel_id, event.room_id) == (CONFERENCE, "conf", "r1")
    assert (event.actor_id, event.session, event.tool_call_id) == ("alice", session, "call-1")
    assert (await h.report("Ask")).outcome == "refused"


async def test_a_failing_gate_fails_closed(make: MakeConference) -> None:
    h = await make()

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def broken(event: ToolCallEvent, ctx: Any) -> HookResult:
        raise RuntimeError("policy store down")

    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})

    result = await h.provider.wait_for_tool_result("call-1")
    assert '"error"' in result
    assert h.questions.empty()
    report = await h.report("Ask")
    assert report.outcome == "refused"
    assert report.error_detail is not None
    assert "policy store down" in report.error_detail


async def test_a_rewrite_reaches_the_person(make: MakeConference) -> None:
    h = await make()

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def soften(event: ToolCallEvent, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": {"question": "Which colour, please?"}})

    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    assert event.arguments == {"question": "Which colour, please?"}
    h.resolve(event)
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER


async def test_an_invalid_rewrite_is_refused(make: MakeConference) -> None:
    h = await make()

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def garble(event: ToolCallEvent, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": {"question": 3}})

    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})

    result = await h.provider.wait_for_tool_result("call-1")
    assert result.startswith('{"error": "Invalid rewritten arguments for \'Ask\'')
    assert h.questions.empty()


async def test_a_sync_report_hook_may_replace_the_result(make: MakeConference) -> None:
    h = await make()

    @h.kit.hook(HookTrigger.ON_TOOL_CALL)
    async def redact(event: ToolCallEvent, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"result": '{"answer": "[redacted]"}'})

    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_tool_result("call-1") == '{"answer": "[redacted]"}'
    assert (await h.report("Ask")).result == '{"answer": "[redacted]"}'


async def test_hooks_scoped_to_another_door_do_not_fire(make: MakeConference) -> None:
    h = await make()
    fired: list[str] = []

    @h.kit.hook(HookTrigger.BEFORE_TOOL_USE, channel_types={ChannelType.REALTIME_VOICE})
    async def voice_only(event: ToolCallEvent, ctx: Any) -> HookResult:
        fired.append("voice")
        return HookResult.block("voice only")

    @h.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, channel_types={CONFERENCE})
    async def conference_only(event: PendingInputEvent, ctx: Any) -> HookResult:
        fired.append("conference")
        return HookResult.allow()

    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert fired == ["conference"]


async def test_a_denying_notification_rejects_the_request(make: MakeConference) -> None:
    h = await make()

    @h.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, priority=-1)
    async def deny(event: PendingInputEvent, ctx: Any) -> HookResult:
        return HookResult.block("nobody to ask")

    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})

    assert await h.provider.wait_for_tool_result("call-1") == body(
        "Human input rejected: Denied by ON_USER_INPUT_REQUIRED hook"
    )

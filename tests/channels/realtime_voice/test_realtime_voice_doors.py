"""Every rule of a voice channel's tool calls, on each of its doors: the provider's function
call, a call recovered from the model's speech, and a reasoning backend's call."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from tests.channels.realtime_harness import ANSWER, ASK, body, lookup_handler, never_answers
from tests.channels.realtime_voice.voice_harness import DOORS, Door, MakeVoice

from roomkit import AITool, ChannelType, HookResult, HookTrigger, HumanInputToolHandler
from roomkit.tools import ToolCallContext, current_tool_actor_id, current_tool_call

BEFORE = HookTrigger.BEFORE_TOOL_USE
VOICE = ChannelType.REALTIME_VOICE


@pytest.fixture(params=list(DOORS))
async def door(request: pytest.FixtureRequest) -> Door:
    return DOORS[request.param]()


async def test_a_human_call_asks_the_caller_and_the_answer_goes_back(
    make: MakeVoice, door: Door
) -> None:
    h = await make()
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    assert (event.channel_type, event.room_id, event.channel_id) == (VOICE, "r1", "voice")
    assert (event.actor_id, event.tool_name) == ("alice", "Ask")
    assert event.arguments == {"question": "Color?"}
    door.check_call_id("call-1", event.tool_call_id)
    assert h.resolve(event)
    assert await door.result(h, "call-1") == ANSWER
    report = await h.report("Ask")
    assert (report.channel_type, report.outcome, report.result) == (VOICE, "served", ANSWER)
    assert report.session is h.session
    assert (report.tool_call_id, report.actor_id) == (event.tool_call_id, "alice")


async def test_an_undeclared_tool_is_refused_before_any_hook(make: MakeVoice, door: Door) -> None:
    h = await make()
    gated: list[Any] = []

    @h.kit.hook(BEFORE)
    async def gate(event: Any, ctx: Any) -> None:
        gated.append(event)

    await door.call(h, "call-1", "Teleport", {"where": "home"})

    assert await door.result(h, "call-1") == body("Tool 'Teleport' is not declared.")
    report = await h.report("Teleport")
    assert (report.outcome, report.channel_type) == ("refused", VOICE)
    assert gated == []


async def test_invalid_arguments_are_refused_before_anyone_is_asked(
    make: MakeVoice, door: Door
) -> None:
    h = await make()
    await door.call(h, "call-1", "Ask", {"question": 5})

    expected = body("Invalid arguments for 'Ask': argument 'question' must be of type string")
    assert await door.result(h, "call-1") == expected
    assert (await h.report("Ask")).outcome == "refused"
    assert h.pending == {}
    assert h.questions.empty()


async def test_a_before_tool_use_block_refuses_the_call(make: MakeVoice, door: Door) -> None:
    h = await make()
    gated: list[Any] = []

    @h.kit.hook(BEFORE, channel_types={VOICE})
    async def gate(event: Any, ctx: Any) -> HookResult:
        gated.append(event)
        return HookResult.block("not during a call")

    await door.call(h, "call-1", "Ask", {"question": "Color?"})

    assert await door.result(h, "call-1") == body("not during a call")
    [event] = gated
    assert (event.channel_type, event.channel_id, event.room_id) == (VOICE, "voice", "r1")
    assert (event.session, event.actor_id, event.result) == (h.session, "alice", None)
    assert (await h.report("Ask")).outcome == "refused"
    assert h.pending == {}


async def test_a_failing_gate_hook_refuses_the_call(make: MakeVoice, door: Door) -> None:
    h = await make()

    @h.kit.hook(BEFORE)
    async def boom(event: Any, ctx: Any) -> None:
        raise RuntimeError("hook crashed")

    await door.call(h, "call-1", "Ask", {"question": "Color?"})

    assert await door.result(h, "call-1") == body("Tool 'Ask' denied by pre-execution hook.")
    report = await h.report("Ask")
    assert (report.outcome, report.error_detail) == ("refused", "boom: hook crashed")
    assert h.pending == {}


async def test_a_rewrite_from_the_gate_is_what_the_caller_is_asked(
    make: MakeVoice, door: Door
) -> None:
    h = await make()

    @h.kit.hook(BEFORE)
    async def rewrite(event: Any, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"arguments": {"question": "Which shade of blue?"}})

    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    assert event.arguments == {"question": "Which shade of blue?"}
    h.resolve(event)
    assert await door.result(h, "call-1") == ANSWER
    assert (await h.report("Ask")).arguments == {"question": "Which shade of blue?"}


async def test_a_host_tool_is_served_by_the_tool_handler(make: MakeVoice, door: Door) -> None:
    h = await make(tool_handler=lookup_handler)
    await door.call(h, "call-1", "lookup", {"key": "k"})

    assert await door.result(h, "call-1") == '{"value": 42, "key": "k"}'
    report = await h.report("lookup")
    assert (report.outcome, report.channel_type, report.session) == ("served", VOICE, h.session)


async def test_the_call_bound_does_not_cut_a_human_call(make: MakeVoice, door: Door) -> None:
    """A host call times out under the 0.05 s bound; the human call is still waiting after."""
    h = await make(tool_handler=never_answers, tool_timeout_seconds=0.05)
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    await door.call(h, "call-2", "slow", {})

    assert await door.result(h, "call-2") == body("tool 'slow' did not answer within 0.05 s")
    assert event.pending_id in h.pending
    assert h.resolve(event)
    assert await door.result(h, "call-1") == ANSWER
    assert (await h.report("slow")).error_detail == (
        "ToolTimeoutError: tool 'slow' did not answer within 0.05 s"
    )
    assert (await h.report("Ask")).outcome == "served"


async def test_a_per_tool_bound_applies_to_a_human_call(make: MakeVoice, door: Door) -> None:
    h = await make(tool_timeouts={"Ask": 0.05})
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    assert await door.result(h, "call-1") == body(
        "Human input timed out after 0.05s for tool 'Ask'"
    )
    assert event.pending_id not in h.pending
    assert not h.resolve(event)
    assert (await h.report("Ask")).outcome == "failed"


async def test_the_handler_timeout_fails_a_human_call(make: MakeVoice, door: Door) -> None:
    h = await make(human=HumanInputToolHandler({"Ask"}, timeout=30, tool_definitions=[ASK]))
    await door.call(h, "call-1", "Ask", {"question": "Color?"})

    message = "Human input timed out after 30s for tool 'Ask'"
    assert await door.result(h, "call-1") == body(message)
    report = await h.report("Ask")
    assert (report.outcome, report.error_detail) == ("failed", body(message))


async def test_a_rejection_refuses_the_call(make: MakeVoice, door: Door) -> None:
    h = await make()
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    assert h.human is not None
    h.human.handler.reject(event.pending_id, "I'd rather not say")

    assert await door.result(h, "call-1") == body("Human input rejected: I'd rather not say")
    assert (await h.report("Ask")).outcome == "refused"


async def test_ending_the_session_withdraws_the_request(make: MakeVoice, door: Door) -> None:
    h = await make()
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.voice.end_session(h.session)

    assert event.pending_id not in h.pending
    assert not h.resolve(event)
    await door.finish(h)
    assert h.sent_to_provider() == []
    report = await h.report("Ask")
    assert report.outcome == "cancelled"
    assert report.result == body(
        "Tool call cancelled", tool="Ask", hint="The session ended before its result."
    )


async def test_a_transport_disconnect_withdraws_the_request(make: MakeVoice, door: Door) -> None:
    h = await make()
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.transport.simulate_client_disconnect(h.session)

    assert event.pending_id not in h.pending
    assert not h.resolve(event)
    await door.finish(h)
    assert h.sent_to_provider() == []
    assert (await h.report("Ask")).outcome == "cancelled"
    assert h.voice.sessions == []


async def test_closing_the_channel_withdraws_the_request(make: MakeVoice, door: Door) -> None:
    h = await make()
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.voice.close()

    assert event.pending_id not in h.pending
    assert not h.resolve(event)
    await door.finish(h)
    assert h.sent_to_provider() == []
    report = await h.report("Ask")
    assert report.result == body(
        "Tool call cancelled", tool="Ask", hint="The channel closed before its result."
    )
    assert h.human is not None
    assert h.human.handler.is_closed_for("voice")


async def test_a_human_input_tool_handler_as_tool_handler_gets_no_human_rules(
    make: MakeVoice, door: Door, caplog: pytest.LogCaptureFixture
) -> None:
    """Served as any host tool: the call bound cuts it and no notification fires."""
    ask_host = AITool(name="AskHost", parameters={"type": "object"})
    plain = HumanInputToolHandler({"AskHost"}, timeout=300)
    with caplog.at_level(logging.WARNING, logger="roomkit.tools.human_input"):
        h = await make(tools=[ask_host], tool_handler=plain, tool_timeout_seconds=0.05)
    await door.call(h, "call-1", "AskHost", {})

    assert await door.result(h, "call-1") == body("tool 'AskHost' did not answer within 0.05 s")
    assert h.questions.empty()
    assert plain.handler.pending == {}
    assert any("pass it as human_input_handler=" in r.getMessage() for r in caplog.records)


async def test_a_human_name_is_served_before_the_tool_handler(make: MakeVoice, door: Door) -> None:
    served: list[str] = []

    async def greedy(name: str, arguments: dict[str, Any]) -> str:
        served.append(name)
        return "the host answered"

    h = await make(tool_handler=greedy)
    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await door.result(h, "call-1") == ANSWER
    assert served == []


async def test_an_on_tool_call_hook_may_replace_a_served_result(
    make: MakeVoice, door: Door
) -> None:
    h = await make()

    @h.kit.hook(HookTrigger.ON_TOOL_CALL, channel_types={VOICE})
    async def redact(event: Any, ctx: Any) -> HookResult:
        return HookResult.allow(metadata={"result": '{"answer": "[redacted]"}'})

    await door.call(h, "call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await door.result(h, "call-1") == '{"answer": "[redacted]"}'
    assert (await h.report("Ask")).result == '{"answer": "[redacted]"}'


async def test_a_host_tool_reads_its_own_call_and_the_caller(make: MakeVoice, door: Door) -> None:
    """The call's context is set for the call on every door, and gone once it ends."""
    seen: list[tuple[ToolCallContext | None, str | None]] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        seen.append((current_tool_call(), current_tool_actor_id()))
        return "found"

    h = await make(tool_handler=lookup)
    await door.call(h, "call-1", "lookup", {"key": "k"})

    assert await door.result(h, "call-1") == "found"
    [(call, actor)] = seen
    assert call is not None
    assert (call.room_id, call.channel_id, actor) == ("r1", "voice", "alice")
    door.check_call_id("call-1", call.tool_call_id)
    assert current_tool_call() is None

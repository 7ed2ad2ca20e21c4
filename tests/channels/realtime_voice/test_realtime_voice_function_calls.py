"""The provider's function-call door: the model cancelling a call, a repeated call id."""

from __future__ import annotations

from tests.channels.realtime_harness import ANSWER, body
from tests.channels.realtime_voice.voice_harness import MakeVoice


async def test_the_model_cancelling_a_call_withdraws_its_request(make: MakeVoice) -> None:
    h = await make()
    await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.provider.simulate_tool_call_cancellation(h.session, ["call-1"])

    assert event.pending_id not in h.pending
    assert not h.resolve(event)
    assert h.sent_to_provider() == []
    report = await h.report("Ask")
    assert report.outcome == "cancelled"
    assert report.result == body(
        "Tool call cancelled", tool="Ask", hint="The model cancelled the call before its result."
    )


async def test_cancelling_one_call_leaves_the_others_open(make: MakeVoice) -> None:
    h = await make()
    await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "One?"})
    await h.provider.simulate_tool_call(h.session, "call-2", "Ask", {"question": "Two?"})
    first, second = await h.questions.get(), await h.questions.get()

    await h.provider.simulate_tool_call_cancellation(h.session, ["call-1", "unknown"])

    assert first.pending_id not in h.pending
    assert h.resolve(second)
    assert await h.provider.wait_for_tool_result("call-2") == ANSWER
    assert [call_id for _, call_id, _ in h.provider.tool_results] == ["call-2"]


async def test_a_repeated_call_id_is_served_once(make: MakeVoice) -> None:
    h = await make()
    await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "Color?"})
    await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    h.resolve(event)

    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert len(h.pending) == 0
    assert h.questions.empty()
    assert len(h.provider.tool_results) == 1

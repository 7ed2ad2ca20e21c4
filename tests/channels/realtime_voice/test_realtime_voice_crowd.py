"""A voice model making more calls at once than the channel runs."""

from __future__ import annotations

from tests.channels.realtime_harness import body
from tests.channels.realtime_voice.voice_harness import MakeVoice

from roomkit.channels._calls.checks import MAX_CALLS_AT_ONCE
from roomkit.testing import advance


async def test_function_calls_past_the_bound_are_refused(make: MakeVoice) -> None:
    h = await make()
    total = MAX_CALLS_AT_ONCE + 2
    for n in range(total):
        await h.provider.simulate_tool_call(h.session, f"call-{n}", "Ask", {"question": "?"})

    await advance(301)

    reports = await h.reports_of(total)
    assert h.questions.qsize() == MAX_CALLS_AT_ONCE
    refused = sorted(r.tool_call_id for r in reports if r.outcome == "refused")
    assert refused == sorted(f"call-{n}" for n in range(MAX_CALLS_AT_ONCE, total))
    assert await h.provider.wait_for_tool_result(refused[0]) == body(
        f"Tool 'Ask' did not run: the model made more than {MAX_CALLS_AT_ONCE} tool calls at "
        "once; wait for their results before calling again"
    )

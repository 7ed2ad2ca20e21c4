"""A conference model making more calls at once than the channel runs."""

from __future__ import annotations

from tests.channels.conference.conference_harness import MakeConference
from tests.channels.realtime_harness import body

from roomkit.channels._calls.checks import MAX_CALLS_AT_ONCE
from roomkit.testing import advance

REFUSAL = body(
    f"Tool 'Ask' did not run: the model made more than {MAX_CALLS_AT_ONCE} tool calls at "
    "once; wait for their results before calling again"
)


async def test_calls_past_the_bound_are_refused_and_ask_nobody(make: MakeConference) -> None:
    h = await make()
    session = await h.speak("alice")
    total = MAX_CALLS_AT_ONCE + 3
    for n in range(total):
        await h.call(f"call-{n}", "Ask", {"question": f"Question {n}?"})

    await advance(301)  # the open questions time out: every call has its result

    reports = await h.reports_of(total)
    assert h.questions.qsize() == MAX_CALLS_AT_ONCE
    refused = sorted(r.tool_call_id for r in reports if r.outcome == "refused")
    assert refused == sorted(f"call-{n}" for n in range(MAX_CALLS_AT_ONCE, total))
    results = {call_id: text for sid, call_id, text in h.provider.tool_results if sid == session.id}
    assert [results[call_id] for call_id in refused] == [REFUSAL] * 3


async def test_a_call_after_the_crowd_has_finished_runs(make: MakeConference) -> None:
    h = await make()
    await h.speak("alice")
    for n in range(MAX_CALLS_AT_ONCE + 1):
        await h.call(f"call-{n}", "Ask", {"question": "Color?"})
    await advance(301)
    await h.reports_of(MAX_CALLS_AT_ONCE + 1)
    while not h.questions.empty():
        h.questions.get_nowait()

    await h.call("call-late", "Ask", {"question": "Size?"})

    event = await h.questions.get()
    assert event.tool_call_id == "call-late"

"""A voice model making more calls at once than the channel runs."""

from __future__ import annotations

import asyncio

import pytest
from tests.channels.realtime_harness import ANSWER, body
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


async def test_a_call_made_once_a_result_arrived_is_taken(make: MakeVoice) -> None:
    """A model at the bound that waits for a result, as its refusal says, and calls again at
    once is asked: the call whose result it read no longer counts."""
    h = await make()
    for n in range(MAX_CALLS_AT_ONCE):
        await h.provider.simulate_tool_call(h.session, f"call-{n}", "Ask", {"question": "?"})
    first = await h.questions.get()
    assert h.resolve(first)
    assert await h.provider.wait_for_tool_result(first.tool_call_id) == ANSWER

    await h.provider.simulate_tool_call(h.session, "call-next", "Ask", {"question": "Next?"})

    refused = asyncio.ensure_future(h.provider.wait_for_tool_result("call-next"))
    while not refused.done():
        asked = asyncio.ensure_future(h.questions.get())
        await asyncio.wait({asked, refused}, return_when=asyncio.FIRST_COMPLETED)
        if asked.done() and asked.result().tool_call_id == "call-next":
            refused.cancel()
            return
        asked.cancel()
    pytest.fail(f"call-next was refused: {refused.result()}")

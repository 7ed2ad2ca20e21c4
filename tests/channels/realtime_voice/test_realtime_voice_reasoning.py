"""The reasoning door: ``voice.reason`` hands a request to the backend, whose calls go through
the channel."""

from __future__ import annotations

import asyncio

import pytest
from tests.channels.realtime_harness import ANSWER, body
from tests.channels.realtime_voice.voice_harness import MakeVoice

from roomkit import AITool
from roomkit.channels.realtime_voice import CallTool
from roomkit.voice.realtime.base import RealtimeSession


async def test_the_backend_is_offered_the_sessions_tools(make: MakeVoice) -> None:
    h = await make()
    h.reasoner.script["ask"] = ("Ask", {"question": "Color?"})
    reasoning = asyncio.create_task(h.voice.reason(h.session, "ask"))
    h.resolve(await h.questions.get())

    assert await reasoning == f"I found: {ANSWER}"
    assert h.reasoner.tools_seen == [["Ask", "lookup", "slow"]]
    assert h.sent_to_provider() == []


async def test_reasoning_needs_a_backend(make: MakeVoice) -> None:
    h = await make(reasoning_backend=None)
    with pytest.raises(RuntimeError, match="reasoning_backend="):
        await h.voice.reason(h.session, "anything")


async def test_reasoning_needs_an_open_session(make: MakeVoice) -> None:
    h = await make()
    await h.voice.end_session(h.session)
    with pytest.raises(RuntimeError, match="not open"):
        await h.voice.reason(h.session, "anything")


async def test_a_call_made_after_the_session_ended_is_not_served(make: MakeVoice) -> None:
    h = await make()
    started, ended = asyncio.Event(), asyncio.Event()

    class Lingering:
        async def reason(
            self, session: RealtimeSession, text: str, *, tools: list[AITool], call_tool: CallTool
        ) -> str:
            started.set()
            await ended.wait()
            return await call_tool("Ask", {"question": "Still there?"})

    h.voice.reasoning_backend = Lingering()
    reasoning = asyncio.create_task(h.voice.reason(h.session, "late"))
    await started.wait()
    await h.voice.end_session(h.session)
    ended.set()

    hint = "The session ended before its result."
    assert await reasoning == body("Tool call cancelled", tool="Ask", hint=hint)
    assert h.questions.empty()
    assert (await h.report("Ask")).outcome == "cancelled"


async def test_cancelling_the_reasoning_withdraws_its_request(make: MakeVoice) -> None:
    h = await make()
    h.reasoner.script["ask"] = ("Ask", {"question": "Color?"})
    reasoning = asyncio.create_task(h.voice.reason(h.session, "ask"))
    event = await h.questions.get()

    reasoning.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reasoning

    assert event.pending_id not in h.pending
    assert not h.resolve(event)
    assert (await h.report("Ask")).outcome == "cancelled"
    assert h.session.state == "active"

"""A provider losing the model's side of a session, played by the mock provider: the
channel cuts the session's open calls, withdraws their requests and sends nothing more."""

from __future__ import annotations

import json
from typing import Any

from tests.channels.realtime_voice.voice_harness import MakeVoice

from roomkit.voice.realtime.base import RealtimeSession, RealtimeSessionState
from roomkit.voice.realtime.mock import MockRealtimeProvider

LOST_HINT = "The connection to the model was lost before its result."


async def test_a_lost_session_withdraws_the_requests_of_every_open_call(make: MakeVoice) -> None:
    h = await make()
    session = h.session
    await h.provider.simulate_tool_call(session, "call_1", "Ask", {"question": "A?"})
    spoken = 'call:Ask{question:"B?"}'
    await h.provider.simulate_transcription(session, spoken, role="assistant", final=True)
    asked = [await h.questions.get(), await h.questions.get()]

    await h.provider.simulate_session_lost(session, "socket closed")

    reports = await h.reports_of(2)
    assert {report.outcome for report in reports} == {"cancelled"}
    assert {json.loads(str(report.result))["hint"] for report in reports} == {LOST_HINT}
    assert h.pending == {}
    assert not any(h.resolve(event, "{}") for event in asked)
    assert h.sent_to_provider() == []
    assert session.id not in h.provider.sessions


async def test_a_lost_session_takes_no_new_call_until_it_is_ended(make: MakeVoice) -> None:
    h = await make()
    session = h.session
    await h.provider.simulate_session_lost(session)

    await h.provider.simulate_tool_call(session, "call_2", "Ask", {"question": "C?"})
    assert h.questions.empty()
    assert h.voice.sessions == [session]

    await h.voice.end_session(session)
    assert h.voice.sessions == []
    assert session.state is RealtimeSessionState.ENDED
    assert [call.method for call in h.transport.calls] == ["accept", "disconnect"]


async def test_a_session_lost_while_connecting_never_becomes_active(make: MakeVoice) -> None:
    class LosesOnConnect(MockRealtimeProvider):
        async def connect(self, session: RealtimeSession, **options: Any) -> None:
            await super().connect(session, **options)
            await self.simulate_session_lost(session)

    h = await make(provider=LosesOnConnect())

    assert h.session.state is RealtimeSessionState.CONNECTING
    await h.provider.simulate_tool_call(h.session, "call_3", "Ask", {"question": "D?"})
    assert h.questions.empty()

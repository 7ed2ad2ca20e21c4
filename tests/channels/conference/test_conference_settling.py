"""Settling a conference's requests: unplugging, closing, detaching, ending a session."""

from __future__ import annotations

import asyncio

import pytest
from tests.channels.conference.conference_harness import MakeConference, alice_in_conference
from tests.channels.realtime_harness import ANSWER, body

from roomkit import RoomKit
from roomkit.channels.conference import ConferenceRealtimeConfig
from roomkit.voice.realtime.base import RealtimeSession, RealtimeSessionState
from roomkit.voice.realtime.mock import MockRealtimeProvider


def cancelled(hint: str) -> str:
    return body("Tool call cancelled", tool="Ask", hint=hint)


async def test_unplugging_withdraws_the_open_requests(make: MakeConference) -> None:
    h = await make()
    session = await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.conference.unplug_realtime()

    assert event.pending_id not in h.pending
    assert not h.resolve(event)
    assert h.provider.tool_results == []
    assert [c.method for c in h.provider.calls] == ["connect", "disconnect"]
    assert session.state is RealtimeSessionState.ENDED
    assert h.conference.realtime is None
    assert h.conference.sessions == []
    report = await h.report("Ask")
    assert report.outcome == "cancelled"
    assert report.result == cancelled(
        "The conference's realtime provider was unplugged before its result."
    )
    assert h.human is not None
    assert h.human.handler.is_closed_for("conf")


async def test_nothing_reaches_the_provider_after_unplugging(make: MakeConference) -> None:
    h = await make()
    session = await h.speak()
    await h.conference.unplug_realtime()

    await h.provider.simulate_tool_call(session, "call-1", "Ask", {"question": "Color?"})
    assert await h.backend.simulate_audio("r1", "alice", b"\x00")

    assert h.questions.empty()
    assert h.provider.tool_results == []
    assert h.conference.realtime_session("r1") is None
    assert [c.method for c in h.provider.calls] == ["connect", "disconnect"]


async def test_plugged_again_the_conference_asks_again(make: MakeConference) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    first = await h.questions.get()
    await h.conference.unplug_realtime()

    h.conference.plug_realtime(h.config)
    session = await h.speak("bob")
    await h.call("call-2", "Ask", {"question": "Size?"})
    second = await h.questions.get()

    assert (second.tool_call_id, second.actor_id, second.channel_id) == ("call-2", "bob", "conf")
    assert second.pending_id != first.pending_id
    assert h.resolve(second)
    assert await h.provider.wait_for_tool_result("call-2") == ANSWER
    assert h.provider.tool_results == [(session.id, "call-2", ANSWER)]


async def test_a_new_provider_can_be_plugged_in(make: MakeConference) -> None:
    h = await make()
    await h.conference.unplug_realtime()
    other = MockRealtimeProvider()
    h.conference.plug_realtime(ConferenceRealtimeConfig(other, human_input_handler=h.human))

    session = await h.speak()
    await other.simulate_tool_call(session, "call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await other.wait_for_tool_result("call-1") == ANSWER
    assert h.provider.tool_results == []


async def test_closing_withdraws_the_requests_and_leaves_the_conference(
    make: MakeConference,
) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.conference.close()

    assert not h.resolve(event)
    assert h.provider.tool_results == []
    assert h.backend.joined == set()
    assert h.conference.conferences == {}
    report = await h.report("Ask")
    assert report.result == cancelled("The channel closed before its result.")
    with pytest.raises(RuntimeError, match="closed"):
        h.conference.plug_realtime(h.config)
    with pytest.raises(RuntimeError, match="closed"):
        await h.conference.start_realtime("r1")


async def test_detaching_withdraws_the_room_requests_and_leaves_its_conference(
    make: MakeConference,
) -> None:
    h = await make()
    await h.kit.create_room("r2")
    await h.kit.attach_channel("r2", "conf")
    await h.conference.join("r2")
    await h.speak("alice", room="r1")
    await h.speak("bob", room="r2")
    await h.call("call-1", "Ask", {"question": "Color?"}, room="r1")
    in_r1 = await h.questions.get()
    await h.call("call-2", "Ask", {"question": "Size?"}, room="r2")
    in_r2 = await h.questions.get()

    assert await h.kit.detach_channel("r1", "conf") is True

    assert not h.resolve(in_r1)
    assert h.backend.joined == {"r2"}
    assert h.conference.realtime_session("r1") is None
    assert (await h.report("Ask")).result == cancelled(
        "The conference was detached from the room before its result."
    )
    assert not await h.backend.simulate_audio("r1", "alice", b"\x00")
    assert h.resolve(in_r2)
    assert await h.provider.wait_for_tool_result("call-2") == ANSWER
    assert [call_id for _, call_id, _ in h.provider.tool_results] == ["call-2"]


async def test_ending_a_session_withdraws_and_the_next_speaker_starts_another(
    make: MakeConference,
) -> None:
    h = await make()
    first = await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.conference.end_realtime("r1")

    assert not h.resolve(event)
    assert (await h.report("Ask")).result == cancelled("The session ended before its result.")
    second = await h.speak("bob")
    assert second is not first
    assert [c.method for c in h.provider.calls] == ["connect", "disconnect", "connect"]


async def test_leaving_the_conference_ends_the_room_session(make: MakeConference) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.conference.leave("r1")

    assert not h.resolve(event)
    assert h.backend.joined == set()
    assert h.conference.conferences == {}
    assert h.provider.tool_results == []


async def test_speech_while_leaving_starts_no_session_after_the_leave() -> None:
    class SlowToHangUp(MockRealtimeProvider):
        def __init__(self) -> None:
            super().__init__()
            self.hanging_up = asyncio.Event()
            self.go_on = asyncio.Event()

        async def disconnect(self, session: RealtimeSession) -> None:
            self.hanging_up.set()
            await self.go_on.wait()
            await super().disconnect(session)

    kit = RoomKit()
    provider = SlowToHangUp()
    conference, backend = await alice_in_conference(kit, provider)
    await backend.simulate_audio("r1", "alice", b"\x00\x01")

    leaving = asyncio.create_task(conference.leave("r1"))
    await provider.hanging_up.wait()
    await backend.simulate_audio("r1", "alice", b"\x00\x01")  # still speaking as it leaves
    provider.go_on.set()
    await leaving

    assert conference.realtime_session("r1") is None
    assert conference.sessions == []
    assert [c.method for c in provider.calls] == ["connect", "disconnect"]
    await kit.close()

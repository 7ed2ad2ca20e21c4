"""Participants as a hostile client, or a back end's late report, would make them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.channels.conference.conference_harness import MakeConference
from tests.channels.realtime_harness import (
    ANSWER,
    Watched,
    attach,
    attached_on_sqlite,
    new_human,
)

from roomkit import HookTrigger, PendingInputEvent, RoomKit
from roomkit.channels.conference import ConferenceChannel, ConferenceRealtimeConfig
from roomkit.conference.mock import MockConferenceBackend
from roomkit.voice.realtime.mock import MockRealtimeProvider

UNNAMEABLE = {"huge": "p" * 100_000, "surrogate": "al\ud800ice", "empty": ""}
"""Participant ids no request can name as its actor."""


class LateAudio(MockConferenceBackend):
    """A back end whose audio may reach the channel after its speaker's departure."""

    async def late_audio(self, conference_id: str, participant_id: str) -> None:
        await self._fire_audio(conference_id, participant_id, b"\x00\x01")


@pytest.mark.parametrize("who", list(UNNAMEABLE.values()), ids=list(UNNAMEABLE))
async def test_speech_of_an_id_no_request_can_name_makes_calls_for_nobody(
    make: MakeConference, who: str
) -> None:
    """The question is asked (for anyone there) instead of failing the call."""
    h = await make()
    asked: list[PendingInputEvent] = []
    assert h.human is not None
    handler = h.human.handler

    @h.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def answer_at_once(event: PendingInputEvent, ctx: Any) -> None:
        asked.append(event)
        await handler.aresolve(event.pending_id, ANSWER)

    await h.speak("alice")
    await h.speak(who)
    await h.call("call-1", "Ask", {"question": "Color?"})

    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert [event.actor_id for event in asked] == [None]
    assert [p.id for p in await h.kit.store.list_participants("r1")] == ["alice"]


async def test_an_id_with_control_characters_is_named_as_it_is(make: MakeConference) -> None:
    h = await make()
    who = "al\x00ice\x1b[2J\n"
    await h.speak(who)
    await h.call("call-1", "Ask", {"question": "Color?"})

    event = await h.questions.get()
    assert event.actor_id == who
    await h.backend.simulate_participant_left("r1", who)
    assert "left the conference" in await h.provider.wait_for_tool_result("call-1")


async def late_audio_room() -> tuple[
    RoomKit, Watched, LateAudio, MockRealtimeProvider, ConferenceChannel
]:
    """A kit whose conference channel follows room ``r1`` on a :class:`LateAudio` back end."""
    kit = RoomKit()
    h = Watched(kit, new_human())
    backend = LateAudio()
    provider = MockRealtimeProvider()
    config = ConferenceRealtimeConfig(provider, human_input_handler=h.human)
    conference = ConferenceChannel("conf", backend=backend, realtime=config)
    await attach(kit, conference)
    await conference.join("r1")
    return kit, h, backend, provider, conference


async def test_audio_arriving_after_its_speaker_left_names_nobody() -> None:
    """A chunk the back end delivers late makes no one who left the person asked."""
    kit, h, backend, provider, conference = await late_audio_room()
    for who in ("bob", "alice"):
        await backend.simulate_participant_joined("r1", who)
        await backend.simulate_track_published("r1", who)
        assert await backend.simulate_audio("r1", who, b"\x00\x01")
    await backend.simulate_participant_left("r1", "alice")

    await backend.late_audio("r1", "alice")
    session = conference.realtime_session("r1")
    assert session is not None
    await provider.simulate_tool_call(session, "call-1", "Ask", {"question": "Color?"})

    event = await h.questions.get()
    assert event.actor_id is None
    await kit.close()


async def test_a_speaker_the_back_end_never_reported_joining_is_the_one_asked() -> None:
    """A back end need not report who was there before the channel came: their speech
    still names them, and their leaving refuses their question."""
    kit, h, backend, provider, conference = await late_audio_room()

    await backend.late_audio("r1", "alice")  # never reported joining
    session = conference.realtime_session("r1")
    assert session is not None
    await provider.simulate_tool_call(session, "call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    assert event.actor_id == "alice"

    await backend.simulate_participant_left("r1", "alice")
    result = await provider.wait_for_tool_result("call-1")
    assert "left the conference" in str(result)
    await kit.close()


async def test_a_name_utf8_cannot_encode_is_kept_on_a_sqlite_roster(tmp_path: Path) -> None:
    """The name is shown with U+FFFD in place of its lone surrogate; its owner stays listed."""
    backend = MockConferenceBackend()
    config = ConferenceRealtimeConfig(MockRealtimeProvider(), human_input_handler=new_human())
    conference = ConferenceChannel("conf", backend=backend, realtime=config)
    async with attached_on_sqlite(conference, tmp_path / "rooms.db") as kit:
        await conference.join("r1")
        await backend.simulate_participant_joined("r1", "alice", name="Al\ud800ice")

        roster = await kit.store.list_participants("r1")

    assert [(p.id, p.name) for p in roster] == [("alice", "Al\ufffdice")]

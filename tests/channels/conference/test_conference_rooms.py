"""The conference channel in its rooms: joining, participants, tracks, starting sessions."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from tests.channels.conference.conference_harness import MakeConference
from tests.channels.realtime_harness import attached_on_sqlite, new_human

from roomkit import RoomKit
from roomkit.channels.conference import ConferenceChannel, ConferenceRealtimeConfig
from roomkit.conference.mock import MockConferenceBackend
from roomkit.core.exceptions import ChannelClosedError
from roomkit.models.room import FrameworkEvent
from roomkit.voice.realtime.mock import MockRealtimeProvider


async def test_participants_who_join_go_on_the_room_roster(make: MakeConference) -> None:
    h = await make()
    await h.backend.simulate_participant_joined("r1", "alice", name="Alice")

    roster = await h.kit.store.list_participants("r1")
    assert [(p.id, p.name) for p in roster] == [("alice", "Alice")]


async def test_joining_reports_who_is_already_there(make: MakeConference) -> None:
    h = await make()
    await h.kit.create_room("r2")
    await h.kit.attach_channel("r2", "conf")
    await h.backend.simulate_participant_joined("standup", "carol")
    track = await h.backend.simulate_track_published("standup", "carol")

    await h.conference.join("r2", conference_id="standup")

    assert h.conference.conferences == {"r1": "r1", "r2": "standup"}
    assert [p.id for p in await h.kit.store.list_participants("r2")] == ["carol"]
    assert h.backend.subscribed["standup"] == {track.id}


async def test_two_people_speaking_at_once_start_one_session(make: MakeConference) -> None:
    h = await make()
    for who in ("alice", "bob"):
        await h.backend.simulate_participant_joined("r1", who)
        await h.backend.simulate_track_published("r1", who)

    await asyncio.gather(
        h.backend.simulate_audio("r1", "alice", b"\x00"),
        h.backend.simulate_audio("r1", "bob", b"\x00"),
    )

    assert [c.method for c in h.provider.calls] == ["connect"]
    assert len(h.conference.sessions) == 1


async def test_a_failing_join_leaves_the_room_out_of_the_conference(
    make: MakeConference,
) -> None:
    h = await make()
    await h.kit.create_room("r2")
    await h.kit.attach_channel("r2", "conf")
    h.backend.fail_next("join", ConnectionError("SFU unreachable"))

    with pytest.raises(ConnectionError, match="SFU unreachable"):
        await h.conference.join("r2")

    assert h.conference.conferences == {"r1": "r1"}
    await h.conference.join("r2")
    assert h.conference.conferences == {"r1": "r1", "r2": "r2"}


async def test_a_track_that_fails_to_subscribe_is_not_heard(
    make: MakeConference, caplog: pytest.LogCaptureFixture
) -> None:
    h = await make()
    await h.backend.simulate_participant_joined("r1", "alice")
    h.backend.fail_next("subscribe", ConnectionError("track gone"))
    with caplog.at_level(logging.ERROR, logger="roomkit.channels.conference"):
        await h.backend.simulate_track_published("r1", "alice")

    assert not await h.backend.simulate_audio("r1", "alice", b"\x00")
    assert h.conference.sessions == []
    assert any("Could not subscribe" in r.getMessage() for r in caplog.records)
    await h.speak("bob")
    assert len(h.conference.sessions) == 1


async def test_a_failing_connect_starts_no_session(make: MakeConference) -> None:
    h = await make()

    async def refuse(*args: object, **kwargs: object) -> None:
        raise ConnectionError("model unavailable")

    h.provider.connect = refuse  # type: ignore[method-assign]

    with pytest.raises(ConnectionError):
        await h.conference.start_realtime("r1")

    assert h.conference.sessions == []
    assert h.conference.realtime_session("r1") is None


async def test_audio_without_a_realtime_model_starts_nothing(make: MakeConference) -> None:
    h = await make()
    await h.conference.unplug_realtime()
    await h.backend.simulate_participant_joined("r1", "alice")
    await h.backend.simulate_track_published("r1", "alice")

    assert await h.backend.simulate_audio("r1", "alice", b"\x00")
    assert h.conference.sessions == []
    assert h.provider.calls == []


async def test_starting_a_session_needs_a_model_a_kit_and_an_attached_room(
    make: MakeConference,
) -> None:
    h = await make()
    await h.kit.create_room("elsewhere")
    with pytest.raises(KeyError, match="not attached"):
        await h.conference.start_realtime("elsewhere")
    with pytest.raises(KeyError, match="No room"):
        await h.conference.start_realtime("nowhere")
    await h.conference.unplug_realtime()
    with pytest.raises(RuntimeError, match="plug_realtime"):
        await h.conference.start_realtime("r1")

    loose = ConferenceChannel("loose", backend=MockConferenceBackend())
    with pytest.raises(RuntimeError, match="register_channel"):
        await loose.start_realtime("r1")
    with pytest.raises(RuntimeError, match="register_channel"):
        await loose.join("r1")


async def test_a_room_is_in_one_conference_and_a_conference_serves_one_room(
    make: MakeConference,
) -> None:
    h = await make()
    await h.kit.create_room("r2")
    await h.kit.attach_channel("r2", "conf")

    await h.conference.join("r1")
    with pytest.raises(RuntimeError, match="leave"):
        await h.conference.join("r1", conference_id="other")
    with pytest.raises(ValueError, match="already serves room 'r1'"):
        await h.conference.join("r2", conference_id="r1")
    assert [c.method for c in h.backend.calls] == ["join"]


async def test_a_second_config_cannot_be_plugged_over_the_first(make: MakeConference) -> None:
    h = await make()
    with pytest.raises(RuntimeError, match="unplug_realtime"):
        h.conference.plug_realtime(ConferenceRealtimeConfig(MockRealtimeProvider()))
    with pytest.raises(TypeError, match="ConferenceRealtimeConfig"):
        h.conference.plug_realtime(h.provider)  # type: ignore[arg-type]


async def test_a_config_plugged_before_registration_is_routed_on_registration() -> None:
    human = new_human()
    provider = MockRealtimeProvider()
    conference = ConferenceChannel("conf", backend=MockConferenceBackend())
    conference.plug_realtime(ConferenceRealtimeConfig(provider, human_input_handler=human))
    kit = RoomKit()
    asked: asyncio.Queue[FrameworkEvent] = asyncio.Queue()

    @kit.on("user_input_required")
    async def seen(event: FrameworkEvent) -> None:
        asked.put_nowait(event)

    kit.register_channel(conference)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "conf")
    session = await conference.start_realtime("r1")
    await provider.simulate_tool_call(session, "call-1", "Ask", {"question": "Color?"})
    event = await asked.get()
    human.handler.resolve(event.data["pending_id"], "blue")

    assert await provider.wait_for_tool_result("call-1") == "blue"
    assert (event.room_id, event.data["tool_call_id"]) == ("r1", "call-1")
    await kit.close()


def test_the_backend_must_be_a_conference_backend() -> None:
    with pytest.raises(TypeError, match="ConferenceBackend"):
        ConferenceChannel("conf", backend=object())  # type: ignore[arg-type]


async def test_a_channel_closed_while_joining_reads_the_room_joins_nothing(
    tmp_path: Path,
) -> None:
    backend = MockConferenceBackend()
    conference = ConferenceChannel("conf", backend=backend)
    async with attached_on_sqlite(conference, tmp_path / "rooms.db"):
        joining = asyncio.create_task(conference.join("r1"))
        await conference.close()

        with pytest.raises(ChannelClosedError):
            await joining
    assert backend.joined == set()
    assert conference.conferences == {}

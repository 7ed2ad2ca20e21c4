"""MockConferenceBackend: a conference server a test plays, reporting what a real one would."""

from __future__ import annotations

import logging

import pytest

from roomkit.conference.base import AudioTrack, ConferenceBackend, ConferenceParticipant
from roomkit.conference.mock import MockConferenceBackend


class Listener:
    """Records every event the back end reports, as ``(kind, conference, participant)``."""

    def __init__(self, backend: ConferenceBackend) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.chunks: list[bytes] = []
        self.tracks: list[AudioTrack] = []
        self.unsubscribe = [
            backend.on_participant_joined(self.joined),
            backend.on_participant_left(self.left),
            backend.on_track_published(self.published),
            backend.on_audio(self.audio),
        ]

    async def joined(self, conference_id: str, participant: ConferenceParticipant) -> None:
        self.events.append(("joined", conference_id, participant.id))

    async def left(self, conference_id: str, participant_id: str) -> None:
        self.events.append(("left", conference_id, participant_id))

    async def published(self, conference_id: str, participant_id: str, track: AudioTrack) -> None:
        self.events.append(("track", conference_id, participant_id))
        self.tracks.append(track)

    async def audio(self, conference_id: str, participant_id: str, chunk: bytes) -> None:
        self.events.append(("audio", conference_id, participant_id))
        self.chunks.append(chunk)


async def test_a_conference_not_joined_reports_nothing() -> None:
    backend = MockConferenceBackend()
    listener = Listener(backend)
    await backend.simulate_participant_joined("c1", "alice")
    track = await backend.simulate_track_published("c1", "alice")

    assert listener.events == []
    assert await backend.simulate_audio("c1", "alice", b"hi") is False
    assert backend.participants["c1"]["alice"].id == "alice"
    assert backend.tracks["c1"] == {track.id: track}


async def test_joining_reports_the_participants_and_tracks_already_there() -> None:
    backend = MockConferenceBackend()
    listener = Listener(backend)
    await backend.simulate_participant_joined("c1", "alice")
    await backend.simulate_track_published("c1", "alice", track_id="mic")

    await backend.join("c1")

    assert listener.events == [("joined", "c1", "alice"), ("track", "c1", "alice")]
    assert listener.tracks == [AudioTrack("mic", "alice")]


async def test_audio_reaches_only_a_subscribed_track() -> None:
    backend = MockConferenceBackend()
    listener = Listener(backend)
    await backend.join("c1")
    await backend.simulate_participant_joined("c1", "alice")
    track = await backend.simulate_track_published("c1", "alice")

    assert await backend.simulate_audio("c1", "alice", b"one") is False
    await backend.subscribe("c1", track)
    assert await backend.simulate_audio("c1", "alice", b"two") is True
    assert listener.chunks == [b"two"]


async def test_leaving_ends_the_subscriptions_and_the_events() -> None:
    backend = MockConferenceBackend()
    listener = Listener(backend)
    await backend.join("c1")
    await backend.simulate_participant_joined("c1", "alice")
    await backend.subscribe("c1", await backend.simulate_track_published("c1", "alice"))

    await backend.leave("c1")

    assert await backend.simulate_audio("c1", "alice", b"late") is False
    await backend.simulate_participant_left("c1", "alice")
    assert ("left", "c1", "alice") not in listener.events
    assert [c.method for c in backend.calls] == ["join", "subscribe", "leave"]


async def test_a_participant_leaving_takes_their_tracks() -> None:
    backend = MockConferenceBackend()
    listener = Listener(backend)
    await backend.join("c1")
    await backend.simulate_participant_joined("c1", "alice")
    await backend.subscribe("c1", await backend.simulate_track_published("c1", "alice"))

    await backend.simulate_participant_left("c1", "alice")

    assert listener.events[-1] == ("left", "c1", "alice")
    assert backend.tracks["c1"] == {}
    assert backend.subscribed["c1"] == set()
    assert await backend.simulate_audio("c1", "alice", b"gone") is False


async def test_failures_are_injected_one_call_at_a_time() -> None:
    backend = MockConferenceBackend()
    backend.fail_next("join", ConnectionError("first"))
    backend.fail_next("join", TimeoutError("second"))

    with pytest.raises(ConnectionError, match="first"):
        await backend.join("c1")
    with pytest.raises(TimeoutError, match="second"):
        await backend.join("c1")
    await backend.join("c1")

    assert backend.joined == {"c1"}
    assert [c.args for c in backend.calls] == [{"conference_id": "c1"}] * 3
    with pytest.raises(ValueError, match="join, leave, subscribe"):
        backend.fail_next("publish", ConnectionError())


async def test_a_track_needs_its_participant() -> None:
    backend = MockConferenceBackend()
    with pytest.raises(KeyError, match="simulate_participant_joined"):
        await backend.simulate_track_published("c1", "ghost")


async def test_an_unregistered_or_failing_listener_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = MockConferenceBackend()
    gone, kept = Listener(backend), Listener(backend)

    async def broken(conference_id: str, participant: ConferenceParticipant) -> None:
        raise RuntimeError("listener bug")

    backend.on_participant_joined(broken)
    for unsubscribe in gone.unsubscribe:
        unsubscribe()
    await backend.join("c1")
    with caplog.at_level(logging.ERROR, logger="roomkit.conference"):
        await backend.simulate_participant_joined("c1", "alice")

    assert gone.events == []
    assert kept.events == [("joined", "c1", "alice")]
    assert any("listener bug" in (r.exc_text or "") or r.exc_info for r in caplog.records)
    with pytest.raises(TypeError, match="async callable"):
        backend.on_audio("not callable")  # type: ignore[arg-type]

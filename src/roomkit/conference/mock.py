"""A mock conference back end for tests and examples.

:class:`MockConferenceBackend` plays a conference server: a test makes participants join,
publish audio tracks, speak and leave, and the back end reports it to the channel the way a
real one would: only for conferences the channel joined, and audio only for subscribed
tracks. Each ``simulate_*`` coroutine returns once the channel has taken the event. A test
can make the next ``join``, ``leave`` or ``subscribe`` fail with :meth:`fail_next`, and reads
every call the channel made in :attr:`calls`.
"""

from __future__ import annotations

import itertools
from typing import Any

from roomkit.conference.base import AudioTrack, ConferenceBackend, ConferenceParticipant
from roomkit.voice.realtime.mock import MockCall

__all__ = ["MockConferenceBackend"]

_METHODS = ("join", "leave", "subscribe")


class MockConferenceBackend(ConferenceBackend):
    """A scripted conference server that records what the channel asks of it.

    Attributes:
        calls: every method call, oldest first (a call made to fail is recorded too).
        joined: the conferences the channel is in.
        participants: the participants of each conference, by conference id, then by id.
        tracks: the published audio tracks of each conference, by conference id, then by id.
        subscribed: the ids of the subscribed tracks, by conference id.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[MockCall] = []
        self.joined: set[str] = set()
        self.participants: dict[str, dict[str, ConferenceParticipant]] = {}
        self.tracks: dict[str, dict[str, AudioTrack]] = {}
        self.subscribed: dict[str, set[str]] = {}
        self._failures: dict[str, list[BaseException]] = {}
        self._track_numbers = itertools.count(1)

    # -- what the channel calls ----------------------------------------------------------------

    async def join(self, conference_id: str) -> None:
        """Enter the conference; the participants and tracks already there are reported."""
        self._record("join", conference_id=conference_id)
        self.joined.add(conference_id)
        for participant in list(self.participants.get(conference_id, {}).values()):
            await self._fire_participant_joined(conference_id, participant)
        for track in list(self.tracks.get(conference_id, {}).values()):
            await self._fire_track_published(conference_id, track.participant_id, track)

    async def leave(self, conference_id: str) -> None:
        """Leave the conference: its subscriptions end and its events stop."""
        self._record("leave", conference_id=conference_id)
        self.joined.discard(conference_id)
        self.subscribed.pop(conference_id, None)

    async def subscribe(self, conference_id: str, track: AudioTrack) -> None:
        """Receive the audio of ``track``."""
        self._record("subscribe", conference_id=conference_id, track=track)
        self.subscribed.setdefault(conference_id, set()).add(track.id)

    # -- failure injection ---------------------------------------------------------------------

    def fail_next(self, method: str, error: BaseException) -> None:
        """Make the next call to ``method`` (``"join"``, ``"leave"`` or ``"subscribe"``) raise
        ``error``; failures queue up, one per call.

        Raises:
            ValueError: ``method`` is not one of the three.
        """
        if method not in _METHODS:
            raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
        self._failures.setdefault(method, []).append(error)

    def _record(self, method: str, **args: Any) -> None:
        self.calls.append(MockCall(method, args))
        queued = self._failures.get(method)
        if queued:
            raise queued.pop(0)

    # -- playing the conference ----------------------------------------------------------------

    async def simulate_participant_joined(
        self,
        conference_id: str,
        participant_id: str,
        *,
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ConferenceParticipant:
        """``participant_id`` joins; returns them once the channel has taken it."""
        participant = ConferenceParticipant(participant_id, name, dict(metadata or {}))
        self.participants.setdefault(conference_id, {})[participant_id] = participant
        if conference_id in self.joined:
            await self._fire_participant_joined(conference_id, participant)
        return participant

    async def simulate_track_published(
        self,
        conference_id: str,
        participant_id: str,
        *,
        track_id: str | None = None,
        sample_rate: int = 16000,
    ) -> AudioTrack:
        """``participant_id`` publishes an audio track; returns it once the channel has
        taken it.

        Raises:
            KeyError: the participant is not in the conference.
        """
        if participant_id not in self.participants.get(conference_id, {}):
            raise KeyError(
                f"{participant_id!r} is not in conference {conference_id!r}: "
                "call simulate_participant_joined() first"
            )
        track_id = track_id or f"{participant_id}-audio-{next(self._track_numbers)}"
        track = AudioTrack(track_id, participant_id, sample_rate=sample_rate)
        self.tracks.setdefault(conference_id, {})[track_id] = track
        if conference_id in self.joined:
            await self._fire_track_published(conference_id, participant_id, track)
        return track

    async def simulate_audio(self, conference_id: str, participant_id: str, chunk: bytes) -> bool:
        """``participant_id`` speaks; returns whether the audio reached the channel (it does
        only through a subscribed track of theirs, in a conference the channel joined)."""
        subscribed = self.subscribed.get(conference_id, set())
        heard = conference_id in self.joined and any(
            track.participant_id == participant_id and track.id in subscribed
            for track in self.tracks.get(conference_id, {}).values()
        )
        if heard:
            await self._fire_audio(conference_id, participant_id, bytes(chunk))
        return heard

    async def simulate_participant_left(self, conference_id: str, participant_id: str) -> None:
        """``participant_id`` leaves, with their tracks; returns once the channel has taken it."""
        self.participants.get(conference_id, {}).pop(participant_id, None)
        tracks = self.tracks.get(conference_id, {})
        for track_id in [t.id for t in tracks.values() if t.participant_id == participant_id]:
            del tracks[track_id]
            self.subscribed.get(conference_id, set()).discard(track_id)
        if conference_id in self.joined:
            await self._fire_participant_left(conference_id, participant_id)

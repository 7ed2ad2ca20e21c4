"""The interface between a conference channel and a conference back end (an SFU room, a bridge).

A :class:`ConferenceBackend` puts the channel in conferences: :meth:`~ConferenceBackend.join`
enters one, :meth:`~ConferenceBackend.leave` leaves it, and
:meth:`~ConferenceBackend.subscribe` asks for the audio of a published track. The back end
reports what happens in the conferences it joined: a participant arriving or leaving, a
participant publishing an :class:`AudioTrack`, and audio reaching a subscribed track.

Implementations subclass the ABC and call the ``_fire_*`` methods as their back end reports
events; each returns once every listener has taken the event. The registries of callbacks
live here, so every implementation keeps them the same way (and the same way as the realtime
voice back ends).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from roomkit.voice.callbacks import Callbacks

__all__ = [
    "AudioCallback",
    "AudioTrack",
    "ConferenceBackend",
    "ConferenceParticipant",
    "ParticipantJoinedCallback",
    "ParticipantLeftCallback",
    "TrackPublishedCallback",
]

logger = logging.getLogger("roomkit.conference")


@dataclass(frozen=True, slots=True)
class ConferenceParticipant:
    """Someone in a conference."""

    id: str
    """The participant's id in the conference (their id in the room's roster too)."""
    name: str | None = None
    """A display name, when the back end knows one."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Whatever else the back end says about them."""


@dataclass(frozen=True, slots=True)
class AudioTrack:
    """An audio track a participant published."""

    id: str
    """The track's id in the conference."""
    participant_id: str
    """Who publishes it."""
    sample_rate: int = 16000
    """Samples per second."""
    channels: int = 1
    """Interleaved channels per frame."""
    encoding: str = "pcm16"
    """How the audio bytes are encoded."""


ParticipantJoinedCallback = Callable[[str, ConferenceParticipant], Awaitable[None]]
"""``await cb(conference_id, participant)``: someone joined a conference."""
ParticipantLeftCallback = Callable[[str, str], Awaitable[None]]
"""``await cb(conference_id, participant_id)``: someone left a conference."""
TrackPublishedCallback = Callable[[str, str, AudioTrack], Awaitable[None]]
"""``await cb(conference_id, participant_id, track)``: someone published an audio track."""
AudioCallback = Callable[[str, str, bytes], Awaitable[None]]
"""``await cb(conference_id, participant_id, chunk)``: audio reached a subscribed track."""


class ConferenceBackend(ABC):
    """Conferences the channel joins, and the participants, tracks and audio in them.

    Subclasses implement the three coroutines and call :meth:`_fire_participant_joined`,
    :meth:`_fire_participant_left`, :meth:`_fire_track_published` and :meth:`_fire_audio`
    for the conferences they joined.
    """

    def __init__(self) -> None:
        self._joined: Callbacks[ParticipantJoinedCallback] = Callbacks("participant joined", logger)
        self._left: Callbacks[ParticipantLeftCallback] = Callbacks("participant left", logger)
        self._tracks: Callbacks[TrackPublishedCallback] = Callbacks("track published", logger)
        self._audio: Callbacks[AudioCallback] = Callbacks("audio", logger)

    @property
    def name(self) -> str:
        """The back end's name, for logs."""
        return type(self).__name__

    @abstractmethod
    async def join(self, conference_id: str) -> None:
        """Enter the conference ``conference_id``; its events are reported from then on."""

    @abstractmethod
    async def leave(self, conference_id: str) -> None:
        """Leave the conference ``conference_id``; its events stop."""

    @abstractmethod
    async def subscribe(self, conference_id: str, track: AudioTrack) -> None:
        """Receive the audio of ``track``: it is reported through :meth:`on_audio`."""

    def on_participant_joined(self, callback: ParticipantJoinedCallback) -> Callable[[], None]:
        """Call ``callback`` when someone joins; returns a function that unregisters it."""
        return self._joined.add(callback)

    def on_participant_left(self, callback: ParticipantLeftCallback) -> Callable[[], None]:
        """Call ``callback`` when someone leaves; returns a function that unregisters it."""
        return self._left.add(callback)

    def on_track_published(self, callback: TrackPublishedCallback) -> Callable[[], None]:
        """Call ``callback`` when someone publishes an audio track; returns its unregister
        function."""
        return self._tracks.add(callback)

    def on_audio(self, callback: AudioCallback) -> Callable[[], None]:
        """Call ``callback`` for audio reaching a subscribed track; returns its unregister
        function."""
        return self._audio.add(callback)

    async def _fire_participant_joined(
        self, conference_id: str, participant: ConferenceParticipant
    ) -> None:
        await self._joined.fire(conference_id, participant)

    async def _fire_participant_left(self, conference_id: str, participant_id: str) -> None:
        await self._left.fire(conference_id, participant_id)

    async def _fire_track_published(
        self, conference_id: str, participant_id: str, track: AudioTrack
    ) -> None:
        await self._tracks.fire(conference_id, participant_id, track)

    async def _fire_audio(self, conference_id: str, participant_id: str, chunk: bytes) -> None:
        await self._audio.fire(conference_id, participant_id, chunk)

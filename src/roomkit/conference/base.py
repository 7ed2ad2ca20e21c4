"""The interface between a conference channel and a conference back end (an SFU room, a bridge).

A :class:`ConferenceBackend` puts the channel in conferences: :meth:`~ConferenceBackend.join`
enters one, :meth:`~ConferenceBackend.leave` leaves it, and
:meth:`~ConferenceBackend.subscribe` asks for the audio of a published track. The back end
reports what happens in the conferences it joined: a participant arriving or leaving, a
participant publishing an :class:`AudioTrack`, and audio reaching a subscribed track.

Implementations subclass the ABC and call the ``_fire_*`` methods as their back end reports
events; each returns once every listener has taken the event. The registries of callbacks
live here, so every implementation keeps them the same way.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

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

_C = TypeVar("_C", bound=Callable[..., Awaitable[None]])


class _Callbacks(Generic[_C]):
    """The callbacks registered for one kind of event, called in registration order."""

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._callbacks: list[_C] = []

    def add(self, callback: _C) -> Callable[[], None]:
        if not callable(callback):
            raise TypeError(f"{self._kind} callback must be an async callable, got {callback!r}")
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    async def fire(self, *args: Any) -> None:
        for callback in list(self._callbacks):
            try:
                await callback(*args)
            except Exception:
                # One listener's bug must not stop the back end's event loop or the others.
                logger.exception("%s callback %r failed", self._kind, callback)


class ConferenceBackend(ABC):
    """Conferences the channel joins, and the participants, tracks and audio in them.

    Subclasses implement the three coroutines and call :meth:`_fire_participant_joined`,
    :meth:`_fire_participant_left`, :meth:`_fire_track_published` and :meth:`_fire_audio`
    for the conferences they joined.
    """

    def __init__(self) -> None:
        self._joined: _Callbacks[ParticipantJoinedCallback] = _Callbacks("participant joined")
        self._left: _Callbacks[ParticipantLeftCallback] = _Callbacks("participant left")
        self._tracks: _Callbacks[TrackPublishedCallback] = _Callbacks("track published")
        self._audio: _Callbacks[AudioCallback] = _Callbacks("audio")

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

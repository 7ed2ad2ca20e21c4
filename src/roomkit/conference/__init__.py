"""Conference back ends: the interface a conference channel uses, and its mock."""

from roomkit.conference.base import (
    AudioCallback,
    AudioTrack,
    ConferenceBackend,
    ConferenceParticipant,
    ParticipantJoinedCallback,
    ParticipantLeftCallback,
    TrackPublishedCallback,
)
from roomkit.conference.mock import MockConferenceBackend

__all__ = [
    "AudioCallback",
    "AudioTrack",
    "ConferenceBackend",
    "ConferenceParticipant",
    "MockConferenceBackend",
    "ParticipantJoinedCallback",
    "ParticipantLeftCallback",
    "TrackPublishedCallback",
]

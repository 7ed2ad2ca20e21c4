"""Following the back end's conferences: joining and leaving them, and what they report.

A conference channel joins one conference of the back end per room. While it follows a
conference, the participants who join it go on the room's roster, the audio tracks they
publish are subscribed, and a participant who leaves stops being the one the room's calls are
for. Their audio itself goes to the model over the provider's own media path; the channel only
hears that someone spoke, which starts the room's session and names whom its calls are for.

The ids come from the conference's clients, so nothing about them is taken on trust. Audio of
someone who left the conference (a chunk delivered after its speaker left) names nobody;
audio of someone the back end never reported joining counts them as there. An id
no request can name as its actor (empty, longer than an actor id may be, or text UTF-8 cannot
encode) stays off the roster, and its speech makes the room's calls for nobody. A display
name goes on the roster with U+FFFD in place of each lone surrogate, which no store writes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from roomkit._storable import replaced_surrogates, unencodable_text
from roomkit.conference.base import AudioTrack, ConferenceBackend, ConferenceParticipant
from roomkit.core.exceptions import ChannelStateError
from roomkit.models.json_limits import MAX_ID_CHARS
from roomkit.models.room import Participant

if TYPE_CHECKING:
    from roomkit.channels.base import Channel
    from roomkit.channels.conference._rooms import ConferenceRoom

__all__ = ["Follower", "Heard", "Left", "nameable"]

logger = logging.getLogger("roomkit.channels.conference")

Heard = Callable[["ConferenceRoom", str], Awaitable[None]]
"""``await heard(room, participant_id)``: a participant's audio reached a followed room."""
Left = Callable[["ConferenceRoom", str], Awaitable[None]]
"""``await left(room, participant_id)``: a participant left a followed room's conference."""


class Follower:
    """The conferences a channel follows, one per room, and the back end's reports of them.

    Args:
        channel: the channel following them; its kit's store takes the participants.
        backend: the conference server.
        heard: told whenever a participant's audio reaches a followed room.
        left: told whenever a participant leaves a followed room's conference.
    """

    def __init__(
        self, channel: Channel, backend: ConferenceBackend, heard: Heard, left: Left
    ) -> None:
        self._channel = channel
        self._backend = backend
        self._heard = heard
        self._left = left
        self._by_conference: dict[str, ConferenceRoom] = {}
        self._unsubscribe = [
            backend.on_participant_joined(self._on_participant_joined),
            backend.on_participant_left(self._on_participant_left),
            backend.on_track_published(self._on_track_published),
            backend.on_audio(self._on_audio),
        ]

    async def join(self, room: ConferenceRoom, conference_id: str) -> None:
        """Join ``conference_id`` for ``room``; joining the room's own conference again does
        nothing.

        Raises:
            ChannelStateError: the room is in another conference already.
            ValueError: the conference serves another room.
            Exception: whatever the back end's ``join`` raised (the room is not joined).
        """
        if room.conference_id == conference_id:
            return
        if room.conference_id is not None:
            raise ChannelStateError(
                f"Room {room.room_id!r} is in conference {room.conference_id!r}: leave() it first"
            )
        other = self._by_conference.get(conference_id)
        if other is not None:
            raise ValueError(f"Conference {conference_id!r} already serves room {other.room_id!r}")
        # Known before joining: the back end reports who is there as it lets the channel in.
        room.conference_id = conference_id
        self._by_conference[conference_id] = room
        try:
            await self._backend.join(conference_id)
        except BaseException:
            room.conference_id = None
            self._by_conference.pop(conference_id, None)
            raise

    async def leave(self, room: ConferenceRoom) -> None:
        """Stop following ``room``'s conference, if any, and leave it on the back end.

        Raises:
            Exception: whatever the back end's ``leave`` raised (the conference is no longer
                followed all the same).
        """
        conference_id = room.conference_id
        if conference_id is None:
            return
        room.conference_id, room.speaker = None, None
        room.present.clear()
        room.departures.clear()
        self._by_conference.pop(conference_id, None)
        await self._backend.leave(conference_id)

    async def quietly_leave(self, room: ConferenceRoom) -> None:
        """:meth:`leave`, logging what the back end raised instead of raising it."""
        try:
            await self.leave(room)
        except Exception:
            logger.exception("Could not leave the conference of room %s", room.room_id)

    def stop(self) -> None:
        """Stop taking what the back end reports."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()

    # -- what the conference reports ---------------------------------------------------------

    async def _on_participant_joined(
        self, conference_id: str, participant: ConferenceParticipant
    ) -> None:
        room, kit = self._by_conference.get(conference_id), self._channel.kit
        if room is None:
            return
        room.present.add(participant.id)
        if not nameable(participant.id):
            logger.warning(
                "Participant %.80r of conference %s has an id no request can name: their "
                "speech makes the room's calls for nobody",
                participant.id,
                conference_id,
            )
            return
        if kit is not None:
            name = participant.name
            if isinstance(name, str) and not name.isascii():
                name = replaced_surrogates(name)
            await kit.store.add_participant(Participant(participant.id, room.room_id, name))

    async def _on_participant_left(self, conference_id: str, participant_id: str) -> None:
        room = self._by_conference.get(conference_id)
        if room is None:
            return
        room.departures[participant_id] = room.departures.get(participant_id, 0) + 1
        if room.speaker == participant_id:
            # Someone who left answers nothing: later calls are for nobody until someone speaks.
            room.speaker = None
        if participant_id in room.present:
            room.present.discard(participant_id)
            # One no request names may still answer a question for anyone: their leaving
            # last leaves it to nobody.
            await self._left(room, participant_id)

    async def _on_track_published(
        self, conference_id: str, participant_id: str, track: AudioTrack
    ) -> None:
        if conference_id not in self._by_conference:
            return
        try:
            await self._backend.subscribe(conference_id, track)
        except Exception:
            logger.exception(
                "Could not subscribe to track %s of %s in conference %s",
                track.id,
                participant_id,
                conference_id,
            )

    async def _on_audio(self, conference_id: str, participant_id: str, chunk: bytes) -> None:
        # The speech itself goes to the model over the provider's own media path.
        del chunk
        room = self._by_conference.get(conference_id)
        if room is None:
            return
        if participant_id not in room.present:
            if participant_id in room.departures:
                return  # a chunk delivered after its speaker left
            # A back end that did not report them joining (nothing in its contract says it
            # reports who was there before the channel came): speaking, they are there.
            room.present.add(participant_id)
        await self._heard(room, participant_id)


def nameable(participant_id: object) -> bool:
    """Whether a request can name ``participant_id`` as its actor: non-empty text of at most
    :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters that UTF-8 can encode."""
    return (
        isinstance(participant_id, str)
        and 0 < len(participant_id) <= MAX_ID_CHARS
        and (participant_id.isascii() or unencodable_text(participant_id) is None)
    )

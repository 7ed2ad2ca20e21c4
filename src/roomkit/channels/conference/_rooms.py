"""What a conference channel keeps per room: its conference, its realtime session, its speaker.

A room may be joined to one conference of the back end and may run one realtime session. The
session starts when a participant's audio reaches the channel, or when the application asks;
its calls are for the participant who spoke last. Starting is serialised per room, so two
participants speaking at once start one session, not two.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from roomkit.channels._voice.live import LiveSession
from roomkit.channels.conference._plugged import Plugged

__all__ = ["ConferenceRoom"]


@dataclass(eq=False)
class ConferenceRoom:
    """One room as the conference channel sees it."""

    room_id: str
    """The room."""
    conference_id: str | None = None
    """The back end's conference joined for the room, if any."""
    live: LiveSession | None = None
    """The room's realtime session, while it runs."""
    plugged: Plugged | None = None
    """The plugged config the session was started under."""
    speaker: str | None = None
    """The participant whose audio reached the session last, while they are still there."""
    present: set[str] = field(default_factory=set)
    """The participants in the conference now, as the back end reported them."""
    departures: dict[str, int] = field(default_factory=dict)
    """How many times each participant left the conference, so that one who left while
    their speech started the session is not made the speaker once it has started."""
    starting: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while the room's session starts."""

    @property
    def open(self) -> bool:
        """True while the room's session takes and answers calls."""
        return self.live is not None and self.live.open

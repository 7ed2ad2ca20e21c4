"""What a conference channel keeps per room: its conference, its realtime session, its speaker.

A room may be joined to one conference of the back end and may run one realtime session. The
session starts when a participant's audio reaches the channel, or when the application asks;
its calls are for the participant who spoke last. Starting is serialised per room, so two
participants speaking at once start one session, not two.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from roomkit.channels.conference._call import Plugged
from roomkit.channels.realtime_voice._live import LiveSession
from roomkit.voice.realtime.base import RealtimeSessionState

__all__ = ["DETACHED", "UNPLUGGED", "ConferenceRoom", "finish"]

logger = logging.getLogger("roomkit.channels.conference")

UNPLUGGED = "The conference's realtime provider was unplugged before its result."
DETACHED = "The conference was detached from the room before its result."


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
    starting: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while the room's session starts."""

    @property
    def open(self) -> bool:
        """True while the room's session takes and answers calls."""
        return self.live is not None and self.live.open


async def finish(live: LiveSession, plugged: Plugged, hint: str) -> None:
    """End ``live``: cut its open calls (their requests are withdrawn, nothing more is sent
    to the provider; the model reads ``hint``), then close the model's side."""
    session = live.session
    if live.ending is None:
        live.ending = hint
    session.state = RealtimeSessionState.ENDING
    await live.cut_calls(None, hint)
    try:
        await plugged.config.provider.disconnect(session)
    except Exception:
        logger.exception("Could not disconnect session %s from its provider", session.id)
    session.state = RealtimeSessionState.ENDED

"""Helpers for the conference channel tests (this module holds no tests).

:func:`conference_kits` builds a kit with a conference channel ``conf`` attached to room
``r1`` and joined to the back end's conference ``r1``, with a realtime config on a
:class:`MockRealtimeProvider`. Everything enters through public entries: participants speak
through ``backend.simulate_audio``, the model calls through ``provider.simulate_tool_call``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from tests.channels.realtime_harness import Watched, attach, harnesses, new_human

from roomkit import HumanInputToolHandler, RoomKit
from roomkit.channels.conference import ConferenceChannel, ConferenceRealtimeConfig
from roomkit.conference.mock import MockConferenceBackend
from roomkit.voice.realtime.base import RealtimeSession
from roomkit.voice.realtime.mock import MockRealtimeProvider

__all__ = ["ConferenceHarness", "MakeConference", "alice_in_conference", "conference_kits"]


@dataclass
class ConferenceHarness(Watched):
    """A kit, its conference channel ``conf`` in room ``r1``, and the mocks behind it."""

    conference: ConferenceChannel
    backend: MockConferenceBackend
    provider: MockRealtimeProvider
    config: ConferenceRealtimeConfig

    async def speak(self, participant: str = "alice", room: str = "r1") -> RealtimeSession:
        """``participant`` joins (once), publishes a track (once) and speaks in ``room``'s
        conference; return the room's session."""
        if participant not in self.backend.participants.get(room, {}):
            await self.backend.simulate_participant_joined(room, participant)
            await self.backend.simulate_track_published(room, participant)
        assert await self.backend.simulate_audio(room, participant, b"\x00\x01" * 160)
        session = self.conference.realtime_session(room)
        assert session is not None
        return session

    async def call(self, call_id: str, name: str, arguments: Any, room: str = "r1") -> None:
        """The model of ``room``'s session calls ``name``."""
        session = self.conference.realtime_session(room)
        assert session is not None, f"no session in {room}"
        await self.provider.simulate_tool_call(session, call_id, name, arguments)


MakeConference = Callable[..., Awaitable[ConferenceHarness]]
"""``await make(human=..., **config_options)`` builds a :class:`ConferenceHarness`."""


async def _conference(
    kit: RoomKit, human: HumanInputToolHandler | None, options: dict[str, Any]
) -> ConferenceHarness:
    provider = MockRealtimeProvider()
    backend = MockConferenceBackend()
    config = ConferenceRealtimeConfig(
        provider, human_input_handler=human, system_prompt="You help the room.", **options
    )
    conference = ConferenceChannel("conf", backend=backend, realtime=config)
    await attach(kit, conference)
    await conference.join("r1")
    return ConferenceHarness(kit, human, conference, backend, provider, config)


def conference_kits() -> AbstractAsyncContextManager[MakeConference]:
    """Yield a builder of harnesses; every kit it built is closed on the way out."""
    return harnesses(_conference)


async def alice_in_conference(
    kit: RoomKit, provider: MockRealtimeProvider
) -> tuple[ConferenceChannel, MockConferenceBackend]:
    """A conference channel ``conf`` on ``provider``, in room ``r1`` and its conference,
    where alice is with a published track (she has not spoken yet)."""
    backend = MockConferenceBackend()
    config = ConferenceRealtimeConfig(provider, human_input_handler=new_human())
    conference = ConferenceChannel("conf", backend=backend, realtime=config)
    await attach(kit, conference)
    await conference.join("r1")
    await backend.simulate_participant_joined("r1", "alice")
    await backend.simulate_track_published("r1", "alice")
    return conference, backend

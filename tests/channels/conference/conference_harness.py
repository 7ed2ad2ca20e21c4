"""Helpers for the conference channel tests (this module holds no tests).

:func:`conference_kits` builds a kit with a conference channel ``conf`` attached to room
``r1`` and joined to the back end's conference ``r1``, with a realtime config on a
:class:`MockRealtimeProvider`. Everything enters through public entries: participants speak
through ``backend.simulate_audio``, the model calls through ``provider.simulate_tool_call``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from ai_harness import ASK, LOOKUP, new_human

from roomkit import (
    AITool,
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    PendingInputEvent,
    RoomKit,
    ToolCallEvent,
)
from roomkit.channels.conference import ConferenceChannel, ConferenceRealtimeConfig
from roomkit.conference.mock import MockConferenceBackend
from roomkit.voice.realtime.base import RealtimeSession
from roomkit.voice.realtime.mock import MockRealtimeProvider

__all__ = ["ASK", "LOOKUP", "new_human"]

ANSWER = '{"answer": "blue"}'

SLOW = AITool(name="slow", description="Never answers.", parameters={"type": "object"})


def body(message: str, **extra: str) -> str:
    """The JSON error object the model reads."""
    return json.dumps({"error": message, **extra})


@dataclass
class ConferenceHarness:
    """A kit, its conference channel ``conf`` in room ``r1``, and the mocks behind it."""

    kit: RoomKit
    conference: ConferenceChannel
    backend: MockConferenceBackend
    provider: MockRealtimeProvider
    config: ConferenceRealtimeConfig
    human: HumanInputToolHandler | None
    reports: list[ToolCallEvent] = field(default_factory=list)
    """Every ON_TOOL_CALL report, as an ASYNC observer saw it."""
    questions: asyncio.Queue[PendingInputEvent] = field(default_factory=asyncio.Queue)
    """Every ON_USER_INPUT_REQUIRED event, as a SYNC hook saw it."""
    reported: asyncio.Condition = field(default_factory=asyncio.Condition)
    """Notified on every report."""

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

    @property
    def pending(self) -> dict[str, Any]:
        """The human-input requests still open."""
        assert self.human is not None
        return dict(self.human.handler.pending)

    def resolve(self, event: PendingInputEvent, answer: str = ANSWER) -> bool:
        """Answer the request of ``event``."""
        assert self.human is not None
        return self.human.handler.resolve(event.pending_id, answer)

    async def report(self, name: str) -> ToolCallEvent:
        """Wait for the report of the call to ``name``; assert that it is the only one."""
        async with self.reported:
            await self.reported.wait_for(lambda: any(e.name == name for e in self.reports))
        await self.kit.hooks.drain()
        found = [event for event in self.reports if event.name == name]
        assert len(found) == 1, f"{len(found)} reports for {name}: {found}"
        return found[0]


MakeConference = Callable[..., Awaitable[ConferenceHarness]]
"""``await make(human=..., **config_options)`` builds a :class:`ConferenceHarness`."""


@asynccontextmanager
async def conference_kits() -> AsyncIterator[MakeConference]:
    """Yield a builder of harnesses; every kit it built is closed on the way out."""
    kits: list[RoomKit] = []
    default = object()

    async def make(*, human: Any = default, **options: Any) -> ConferenceHarness:
        kit = RoomKit()
        kits.append(kit)
        provider = MockRealtimeProvider()
        backend = MockConferenceBackend()
        handler = new_human() if human is default else human
        options.setdefault("tools", [LOOKUP, SLOW])
        config = ConferenceRealtimeConfig(
            provider, human_input_handler=handler, system_prompt="You help the room.", **options
        )
        conference = ConferenceChannel("conf", backend=backend, realtime=config)
        kit.register_channel(conference)
        await kit.create_room("r1")
        await kit.attach_channel("r1", "conf")
        await conference.join("r1")
        harness = ConferenceHarness(kit, conference, backend, provider, config, handler)

        @kit.hook(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
        async def record(event: ToolCallEvent, ctx: Any) -> None:
            harness.reports.append(event)
            async with harness.reported:
                harness.reported.notify_all()

        @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
        async def announce(event: PendingInputEvent, ctx: Any) -> None:
            harness.questions.put_nowait(event)

        return harness

    try:
        yield make
    finally:
        for kit in kits:
            await kit.close()


async def never_answers(name: str, arguments: dict[str, Any]) -> str:
    """A host tool handler whose calls never finish on their own."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def lookup_handler(name: str, arguments: dict[str, Any]) -> str:
    """A host tool handler serving ``lookup`` (and hanging on anything else)."""
    if name == "lookup":
        return json.dumps({"value": 42, "key": arguments.get("key")})
    return await never_answers(name, arguments)

"""Helpers shared by the realtime channel tests (this module holds no tests).

The voice channel's tests, the conference channel's and the OpenAI Realtime provider's build
their kits the same way and read them the same way. :class:`Watched` is a kit whose
ON_TOOL_CALL reports and ON_USER_INPUT_REQUIRED events are recorded; each suite's harness
extends it with the channel and back ends it drives. :func:`harnesses` yields a builder of
harnesses whose kits are closed on the way out; :func:`attach` puts a channel in room ``r1``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tests.channels.ai_harness import ASK, LOOKUP, new_human

from roomkit import (
    AITool,
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    PendingInputEvent,
    RoomKit,
    ToolCallEvent,
)
from roomkit.channels.base import Channel
from roomkit.stores.sqlite import SQLiteRoomStore
from roomkit.voice.realtime.base import RealtimeSession
from roomkit.voice.realtime.mock import MockRealtimeProvider

__all__ = [
    "ANSWER",
    "ASK",
    "LOOKUP",
    "SLOW",
    "SlowToConnect",
    "Watched",
    "attach",
    "attached_on_sqlite",
    "body",
    "harnesses",
    "lookup_handler",
    "never_answers",
    "new_human",
]

ANSWER = '{"answer": "blue"}'

SLOW = AITool(name="slow", description="Never answers.", parameters={"type": "object"})


def body(message: str, **extra: str) -> str:
    """The JSON error object the model reads."""
    return json.dumps({"error": message, **extra})


async def never_answers(name: str, arguments: dict[str, Any]) -> str:
    """A host tool handler whose calls never finish on their own."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def lookup_handler(name: str, arguments: dict[str, Any]) -> str:
    """A host tool handler serving ``lookup`` (and hanging on anything else)."""
    if name == "lookup":
        return json.dumps({"value": 42, "key": arguments.get("key")})
    return await never_answers(name, arguments)


class SlowToConnect(MockRealtimeProvider):
    """A mock model whose connection opens only once the test sets :attr:`go_on`."""

    def __init__(self) -> None:
        super().__init__()
        self.connecting = asyncio.Event()
        """Set once a connection started opening."""
        self.go_on = asyncio.Event()
        """Lets the connections open."""

    async def connect(self, session: RealtimeSession, **options: Any) -> None:
        self.connecting.set()
        await self.go_on.wait()
        await super().connect(session, **options)


async def attach(kit: RoomKit, channel: Channel, room_id: str = "r1") -> None:
    """Register ``channel`` with ``kit`` and attach it to a new room ``room_id``."""
    kit.register_channel(channel)
    await kit.create_room(room_id)
    await kit.attach_channel(room_id, channel.channel_id)


@asynccontextmanager
async def attached_on_sqlite(channel: Channel, path: Path) -> AsyncIterator[RoomKit]:
    """A kit whose rooms are in SQLite at ``path`` (its reads answer from a thread), with
    ``channel`` in room ``r1``; closed, with its store, on the way out."""
    rooms = SQLiteRoomStore(path)
    kit = RoomKit(rooms)
    try:
        await attach(kit, channel)
        yield kit
    finally:
        await kit.close()
        await rooms.close()


@dataclass
class Watched:
    """A kit whose reports and questions are recorded from the moment this is built."""

    kit: RoomKit
    human: HumanInputToolHandler | None
    """The channel's human-input handler, if any."""
    reports: list[ToolCallEvent] = field(default_factory=list, kw_only=True)
    """Every ON_TOOL_CALL report, as an ASYNC observer saw it."""
    questions: asyncio.Queue[PendingInputEvent] = field(default_factory=asyncio.Queue, kw_only=True)
    """Every ON_USER_INPUT_REQUIRED event, as a SYNC hook saw it."""
    reported: asyncio.Condition = field(default_factory=asyncio.Condition, kw_only=True)
    """Notified on every report."""

    def __post_init__(self) -> None:
        @self.kit.hook(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
        async def record(event: ToolCallEvent, ctx: Any) -> None:
            self.reports.append(event)
            async with self.reported:
                self.reported.notify_all()

        @self.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
        async def announce(event: PendingInputEvent, ctx: Any) -> None:
            self.questions.put_nowait(event)

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

    async def reports_of(self, count: int) -> list[ToolCallEvent]:
        """Wait until ``count`` calls are reported; return their reports, oldest first."""
        async with self.reported:
            await self.reported.wait_for(lambda: len(self.reports) >= count)
        return self.reports[:count]


H = TypeVar("H", bound=Watched)

Build = Callable[[RoomKit, HumanInputToolHandler | None, dict[str, Any]], Awaitable[H]]
"""``await build(kit, human, options)``: a harness on a new kit."""


@asynccontextmanager
async def harnesses(build: Build[H]) -> AsyncIterator[Callable[..., Awaitable[H]]]:
    """Yield ``await make(*, human=..., **options)``, which builds a harness on a new kit.

    ``human`` defaults to :func:`new_human`; pass ``None`` for a channel without human-input
    tools. ``options`` go to ``build`` with ``tools`` set to ``[LOOKUP, SLOW]`` unless given.
    Every kit built is closed on the way out.
    """
    kits: list[RoomKit] = []
    default = object()

    async def make(*, human: Any = default, **options: Any) -> H:
        kit = RoomKit()
        kits.append(kit)
        handler = new_human() if human is default else human
        options.setdefault("tools", [LOOKUP, SLOW])
        return await build(kit, handler, options)

    try:
        yield make
    finally:
        for kit in kits:
            await kit.close()

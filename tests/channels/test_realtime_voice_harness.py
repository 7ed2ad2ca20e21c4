"""Helpers for the realtime voice channel tests (this module holds no tests).

:func:`voice_kits` builds a kit with a voice channel ``voice`` attached to room ``r1`` and a
session for ``alice``. The three doors of the channel are driven through :class:`Door`
objects, each entering through the door's public entry: the provider's function call
(``provider.simulate_tool_call``), a call spoken by the model
(``provider.simulate_transcription``) and a reasoning backend's call (``voice.reason``).
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
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
from roomkit.channels.realtime_voice import CallTool, RealtimeVoiceChannel
from roomkit.voice.realtime.base import RealtimeSession
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

__all__ = ["ASK", "LOOKUP", "new_human"]

ANSWER = '{"answer": "blue"}'

SLOW = AITool(name="slow", description="Never answers.", parameters={"type": "object"})


def body(message: str, **extra: str) -> str:
    """The JSON error object the model reads."""
    return json.dumps({"error": message, **extra})


class ScriptedReasoner:
    """A reasoning backend that makes the call scripted for the text it is given."""

    def __init__(self) -> None:
        self.script: dict[str, tuple[str, Any]] = {}
        """The call to make, by the text ``reason`` receives."""
        self.results: dict[str, str] = {}
        """What each ``call_tool`` returned, by text."""
        self.tools_seen: list[list[str]] = []
        """The tool names offered to each ``reason``."""
        self.calling: dict[str, asyncio.Event] = {}
        """Set once the call for a text has been handed to the channel."""

    async def reason(
        self, session: RealtimeSession, text: str, *, tools: list[AITool], call_tool: CallTool
    ) -> str:
        self.tools_seen.append([tool.name for tool in tools])
        name, arguments = self.script[text]
        calling = call_tool(name, arguments)
        self.calling.setdefault(text, asyncio.Event()).set()
        result = await calling
        self.results[text] = result
        return f"I found: {result}"


@dataclass
class VoiceHarness:
    """A kit, its voice channel ``voice`` in room ``r1``, and alice's session."""

    kit: RoomKit
    voice: RealtimeVoiceChannel
    provider: MockRealtimeProvider
    transport: MockRealtimeTransport
    human: HumanInputToolHandler | None
    reasoner: ScriptedReasoner
    session: RealtimeSession
    reports: list[ToolCallEvent] = field(default_factory=list)
    """Every ON_TOOL_CALL report, as an ASYNC observer saw it."""
    questions: asyncio.Queue[PendingInputEvent] = field(default_factory=asyncio.Queue)
    """Every ON_USER_INPUT_REQUIRED event, as a SYNC hook saw it."""
    reported: asyncio.Condition = field(default_factory=asyncio.Condition)
    """Notified on every report."""

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

    def sent_to_provider(self) -> list[tuple[str, str]]:
        """Every result submitted and every context injected, as (method, text)."""
        submitted = [("submit", result) for _, _, result in self.provider.tool_results]
        injected = [("inject", text) for _, text in self.provider.injected]
        return submitted + injected


MakeVoice = Callable[..., Awaitable[VoiceHarness]]
"""``await make(human=..., **channel_options)`` builds a :class:`VoiceHarness`."""


@asynccontextmanager
async def voice_kits() -> AsyncIterator[MakeVoice]:
    """Yield a builder of harnesses; every kit it built is closed on the way out."""
    kits: list[RoomKit] = []
    default = object()

    async def make(*, human: Any = default, **options: Any) -> VoiceHarness:
        kit = RoomKit()
        kits.append(kit)
        provider = MockRealtimeProvider()
        transport = MockRealtimeTransport()
        handler = new_human() if human is default else human
        reasoner = ScriptedReasoner()
        options.setdefault("tools", [LOOKUP, SLOW])
        options.setdefault("reasoning_backend", reasoner)
        voice = RealtimeVoiceChannel(
            "voice",
            provider=provider,
            transport=transport,
            system_prompt="You help callers.",
            human_input_handler=handler,
            **options,
        )
        kit.register_channel(voice)
        await kit.create_room("r1")
        await kit.attach_channel("r1", "voice")
        session = await voice.start_session("r1", "alice", "alice-phone")
        harness = VoiceHarness(kit, voice, provider, transport, handler, reasoner, session)

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
    """A host tool handler serving ``lookup`` (and hanging on ``slow``)."""
    if name == "lookup":
        return json.dumps({"value": 42, "key": arguments.get("key")})
    return await never_answers(name, arguments)


class Door(ABC):
    """One door of the channel, driven through its public entry."""

    id: str

    @abstractmethod
    async def call(self, h: VoiceHarness, label: str, name: str, arguments: Any) -> None:
        """Make a call through the door; return once the channel has taken it."""

    @abstractmethod
    async def result(self, h: VoiceHarness, label: str) -> str:
        """Wait for what the model reads for the call ``label``."""

    def check_call_id(self, label: str, call_id: str) -> None:
        """Assert that ``call_id`` is the id the call ``label`` travels under."""
        assert call_id.startswith(f"{self.id}-"), call_id

    async def finish(self, h: VoiceHarness) -> None:  # noqa: B027 - most doors hold no task
        """Wait for whatever the door still runs."""


class FunctionCallDoor(Door):
    """The provider's function call: the result is submitted under the call's id."""

    id = "function_call"

    async def call(self, h: VoiceHarness, label: str, name: str, arguments: Any) -> None:
        await h.provider.simulate_tool_call(h.session, label, name, arguments)

    async def result(self, h: VoiceHarness, label: str) -> str:
        return await h.provider.wait_for_tool_result(label)

    def check_call_id(self, label: str, call_id: str) -> None:
        assert call_id == label


class SpeechDoor(Door):
    """A call the model speaks: the result is injected as silent context."""

    id = "recovered"

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    async def call(self, h: VoiceHarness, label: str, name: str, arguments: Any) -> None:
        self.names[label] = name
        pairs = ", ".join(f"{key}: {json.dumps(value)}" for key, value in arguments.items())
        text = f"Let me check that. call:{name}{{{pairs}}}"
        await h.provider.simulate_transcription(h.session, text, role="assistant", final=True)

    async def result(self, h: VoiceHarness, label: str) -> str:
        prefix = f"Result of {self.names[label]}: "
        text = await h.provider.wait_for_injection(prefix)
        return text.removeprefix(prefix)


class ReasoningDoor(Door):
    """A reasoning backend's call: the result is what its ``call_tool`` returns."""

    id = "reasoning"

    def __init__(self) -> None:
        self.tasks: dict[str, asyncio.Task[str]] = {}

    async def call(self, h: VoiceHarness, label: str, name: str, arguments: Any) -> None:
        h.reasoner.script[label] = (name, arguments)
        calling = h.reasoner.calling.setdefault(label, asyncio.Event())
        self.tasks[label] = asyncio.create_task(h.voice.reason(h.session, label))
        await calling.wait()

    async def result(self, h: VoiceHarness, label: str) -> str:
        said = await self.tasks[label]
        result = h.reasoner.results[label]
        assert said == f"I found: {result}"
        return result

    async def finish(self, h: VoiceHarness) -> None:
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


DOORS: dict[str, Callable[[], Door]] = {
    "function_call": FunctionCallDoor,
    "recovered": SpeechDoor,
    "reasoning": ReasoningDoor,
}

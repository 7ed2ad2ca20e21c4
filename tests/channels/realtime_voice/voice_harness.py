"""The realtime voice channel on the mock back ends, for the tests (this module holds no tests).

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
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from tests.channels.realtime_harness import Watched, attach, harnesses

from roomkit import AITool, HumanInputToolHandler, RoomKit
from roomkit.channels.realtime_voice import CallTool, RealtimeVoiceChannel
from roomkit.voice.realtime.base import RealtimeSession
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

__all__ = ["DOORS", "Door", "MakeVoice", "ScriptedReasoner", "VoiceHarness", "voice_kits"]


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
class VoiceHarness(Watched):
    """A kit, its voice channel ``voice`` in room ``r1``, and alice's session."""

    voice: RealtimeVoiceChannel
    provider: MockRealtimeProvider
    transport: MockRealtimeTransport
    reasoner: ScriptedReasoner
    session: RealtimeSession

    def sent_to_provider(self) -> list[tuple[str, str]]:
        """Every result submitted and every context injected, as (method, text)."""
        submitted = [("submit", result) for _, _, result in self.provider.tool_results]
        injected = [("inject", text) for _, text in self.provider.injected]
        return submitted + injected


MakeVoice = Callable[..., Awaitable[VoiceHarness]]
"""``await make(human=..., provider=..., **channel_options)`` builds a :class:`VoiceHarness`
(``provider`` defaults to a new :class:`MockRealtimeProvider`)."""


async def _voice(
    kit: RoomKit, human: HumanInputToolHandler | None, options: dict[str, Any]
) -> VoiceHarness:
    provider = options.pop("provider", None) or MockRealtimeProvider()
    transport = MockRealtimeTransport()
    reasoner = ScriptedReasoner()
    options.setdefault("reasoning_backend", reasoner)
    voice = RealtimeVoiceChannel(
        "voice",
        provider=provider,
        transport=transport,
        system_prompt="You help callers.",
        human_input_handler=human,
        **options,
    )
    await attach(kit, voice)
    session = await voice.start_session("r1", "alice", "alice-phone")
    return VoiceHarness(kit, human, voice, provider, transport, reasoner, session)


def voice_kits() -> AbstractAsyncContextManager[MakeVoice]:
    """Yield a builder of harnesses; every kit it built is closed on the way out."""
    return harnesses(_voice)


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

"""Helpers for the OpenAI Realtime provider tests (this module holds no tests).

:class:`VoiceOnOpenAI` is a kit whose voice channel runs on the OpenAI provider against the
fake API; the ``h`` fixture (in ``conftest.py``) builds it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from fake_openai_realtime import FakeConnection

from roomkit import (
    AITool,
    HumanInputToolHandler,
    PendingInputEvent,
    RoomKit,
    ToolCallEvent,
)
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.voice.realtime.base import RealtimeSession
from roomkit.voice.realtime.openai import OpenAIRealtimeProvider

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the caller a question and wait for the answer.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)

LOOKUP = AITool(
    name="lookup",
    description="Look something up.",
    parameters={
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
    },
)


async def lookup(name: str, arguments: dict[str, Any]) -> str:
    """The host's tool handler: ``lookup`` answers at once."""
    assert name == "lookup"
    return json.dumps({"value": 42, "key": arguments["key"]})


@dataclass
class VoiceOnOpenAI:
    """A kit whose voice channel ``voice`` runs on the OpenAI provider, against the fake API,
    with alice's session open in room ``r1``."""

    kit: RoomKit
    voice: RealtimeVoiceChannel
    provider: OpenAIRealtimeProvider
    human: HumanInputToolHandler
    session: RealtimeSession
    api: FakeConnection
    """alice's connection, as the fake API sees it."""
    questions: asyncio.Queue[PendingInputEvent] = field(default_factory=asyncio.Queue)
    """Every ON_USER_INPUT_REQUIRED event."""
    reports: list[ToolCallEvent] = field(default_factory=list)
    """Every ON_TOOL_CALL report, as an ASYNC observer saw it."""
    reported: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def report(self, name: str) -> ToolCallEvent:
        """Wait for the report of the call to ``name``; assert that it is the only one."""
        async with self.reported:
            await self.reported.wait_for(lambda: any(e.name == name for e in self.reports))
        await self.kit.hooks.drain()
        found = [event for event in self.reports if event.name == name]
        assert len(found) == 1, f"{len(found)} reports for {name}: {found}"
        return found[0]

    async def flush(self, label: str = "flush") -> None:
        """Send a silent marker and wait for the API to receive it: every event the provider
        sent before is then in :attr:`FakeConnection.received`."""
        marker = f"marker: {label}"
        await self.provider.inject_context(self.session, marker)
        await self.api.wait_for("conversation.item.create", lambda e: text_of(e) == marker)


def text_of(event: dict[str, Any]) -> str | None:
    """The text of a ``conversation.item.create`` message, or ``None``."""
    item = event.get("item", {})
    if item.get("type") != "message":
        return None
    return "".join(part.get("text", "") for part in item.get("content", []))


def outputs(api: FakeConnection) -> list[dict[str, Any]]:
    """The ``function_call_output`` items the API received, oldest first."""
    return [
        event["item"]
        for event in api.received
        if event["type"] == "conversation.item.create"
        and event["item"]["type"] == "function_call_output"
    ]

"""Helpers for the OpenAI Realtime provider tests (this module holds no tests).

:class:`VoiceOnOpenAI` is a kit whose voice channel runs on the OpenAI provider against the
fake API; the ``h`` fixture (in ``conftest.py``) builds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fake_openai_realtime import FakeConnection
from tests.channels.realtime_harness import ANSWER, ASK, LOOKUP, Watched

from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.voice.realtime.base import RealtimeSession
from roomkit.voice.realtime.openai import OpenAIRealtimeProvider

__all__ = ["ANSWER", "ASK", "LOOKUP", "VoiceOnOpenAI", "outputs", "text_of"]


@dataclass
class VoiceOnOpenAI(Watched):
    """A kit whose voice channel ``voice`` runs on the OpenAI provider, against the fake API,
    with alice's session open in room ``r1``."""

    voice: RealtimeVoiceChannel
    provider: OpenAIRealtimeProvider
    session: RealtimeSession
    api: FakeConnection
    """alice's connection, as the fake API sees it."""

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

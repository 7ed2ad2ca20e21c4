"""Fixtures for the OpenAI Realtime provider tests.

These tests talk over real sockets on the loopback interface, so they run on the ordinary
asyncio loop (no virtual clock is installed for this directory) and wait on events, never on
time. Every event the fake API received or sent in a test is checked against the SDK's types
when the test ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fake_openai_realtime import API_KEY, FakeOpenAIRealtime
from openai_realtime_harness import LOOKUP, VoiceOnOpenAI
from openai_realtime_shapes import check_client_event, check_server_event
from tests.channels.realtime_harness import attach, lookup_handler, new_human

from roomkit import RoomKit
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.voice.realtime.mock import MockRealtimeTransport
from roomkit.voice.realtime.openai import OpenAIRealtimeProvider


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAIRealtime]:
    """The fake API; every event of every connection is checked for shape at the end."""
    async with FakeOpenAIRealtime() as server:
        yield server
    for connection in server.connections:
        for event in connection.received:
            check_client_event(event)
        for event in connection.sent:
            check_server_event(event)


@pytest.fixture
def provider(fake: FakeOpenAIRealtime) -> OpenAIRealtimeProvider:
    """A provider pointed at the fake API, with the key it accepts."""
    return OpenAIRealtimeProvider(api_key=API_KEY, url=fake.url, voice="marin")


@pytest.fixture
async def h(
    fake: FakeOpenAIRealtime, provider: OpenAIRealtimeProvider
) -> AsyncIterator[VoiceOnOpenAI]:
    """The voice channel on the OpenAI provider, alice's session open."""
    kit = RoomKit()
    human = new_human()
    voice = RealtimeVoiceChannel(
        "voice",
        provider=provider,
        transport=MockRealtimeTransport(),
        system_prompt="You help callers.",
        tools=[LOOKUP],
        tool_handler=lookup_handler,
        human_input_handler=human,
    )
    await attach(kit, voice)
    session = await voice.start_session("r1", "alice", "alice-phone")
    api = await fake.connection()
    try:
        yield VoiceOnOpenAI(kit, human, voice, provider, session, api)
    finally:
        await kit.close()

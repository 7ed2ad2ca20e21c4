"""A provider losing the model's side of a session, played by the mock provider: the
channel cuts the session's open calls, withdraws their requests and sends nothing more."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai_realtime_harness import ASK

from roomkit import (
    HookExecution,
    HookTrigger,
    HumanInputToolHandler,
    PendingInputEvent,
    RoomKit,
    ToolCallEvent,
)
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.voice.realtime.base import RealtimeSession, RealtimeSessionState
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

LOST_HINT = "The connection to the model was lost before its result."


class Kit:
    """A voice channel on the mock provider, alice's session open, its events recorded."""

    def __init__(self) -> None:
        self.kit = RoomKit()
        self.provider = MockRealtimeProvider()
        self.transport = MockRealtimeTransport()
        self.human = HumanInputToolHandler({"AskUserQuestion"}, tool_definitions=[ASK])
        self.voice = RealtimeVoiceChannel(
            "voice",
            provider=self.provider,
            transport=self.transport,
            human_input_handler=self.human,
        )
        self.questions: asyncio.Queue[PendingInputEvent] = asyncio.Queue()
        self.reports: asyncio.Queue[ToolCallEvent] = asyncio.Queue()

        @self.kit.hook(HookTrigger.ON_TOOL_CALL, execution=HookExecution.ASYNC)
        async def record(event: ToolCallEvent, ctx: Any) -> None:
            self.reports.put_nowait(event)

        @self.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
        async def announce(event: PendingInputEvent, ctx: Any) -> None:
            self.questions.put_nowait(event)

    async def start(self) -> RealtimeSession:
        self.kit.register_channel(self.voice)
        await self.kit.create_room("r1")
        await self.kit.attach_channel("r1", "voice")
        return await self.voice.start_session("r1", "alice", "alice-phone")


@pytest.fixture
async def k() -> AsyncIterator[Kit]:
    kit = Kit()
    try:
        yield kit
    finally:
        await kit.kit.close()


async def test_a_lost_session_withdraws_the_requests_of_every_open_call(k: Kit) -> None:
    session = await k.start()
    await k.provider.simulate_tool_call(session, "call_1", "AskUserQuestion", {"question": "A?"})
    spoken = 'call:AskUserQuestion{question:"B?"}'
    await k.provider.simulate_transcription(session, spoken, role="assistant", final=True)
    asked = [await k.questions.get(), await k.questions.get()]

    await k.provider.simulate_session_lost(session, "socket closed")

    reports = [await k.reports.get(), await k.reports.get()]
    assert {report.outcome for report in reports} == {"cancelled"}
    assert {json.loads(str(report.result))["hint"] for report in reports} == {LOST_HINT}
    assert k.human.handler.pending == {}
    assert not any(k.human.handler.resolve(event.pending_id, "{}") for event in asked)
    assert k.provider.tool_results == []
    assert k.provider.injected == []
    assert session.id not in k.provider.sessions


async def test_a_lost_session_takes_no_new_call_until_it_is_ended(k: Kit) -> None:
    session = await k.start()
    await k.provider.simulate_session_lost(session)

    await k.provider.simulate_tool_call(session, "call_2", "AskUserQuestion", {"question": "C?"})
    assert k.questions.empty()
    assert k.voice.sessions == [session]

    await k.voice.end_session(session)
    assert k.voice.sessions == []
    assert session.state is RealtimeSessionState.ENDED
    assert [call.method for call in k.transport.calls] == ["accept", "disconnect"]


async def test_a_session_lost_while_connecting_never_becomes_active(k: Kit) -> None:
    class LosesOnConnect(MockRealtimeProvider):
        async def connect(self, session: RealtimeSession, **options: Any) -> None:
            await super().connect(session, **options)
            await self.simulate_session_lost(session)

    k.provider = LosesOnConnect()
    k.voice = RealtimeVoiceChannel("voice", provider=k.provider, transport=k.transport)

    session = await k.start()

    assert session.state is RealtimeSessionState.CONNECTING
    await k.provider.simulate_tool_call(session, "call_3", "AskUserQuestion", {"question": "D?"})
    assert k.questions.empty()

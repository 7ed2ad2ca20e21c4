"""The mock realtime back ends: what they record, and the events they play."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from roomkit.voice.realtime import RealtimeProvider, RealtimeTransport
from roomkit.voice.realtime.base import RealtimeSession, RealtimeSessionState
from roomkit.voice.realtime.mock import MockCall, MockRealtimeProvider, MockRealtimeTransport


def new_session() -> RealtimeSession:
    return RealtimeSession.new("r1", "alice", "voice", {"line": 1})


def test_a_new_session_is_connecting_with_a_fresh_id() -> None:
    first, second = new_session(), new_session()
    assert first.state is RealtimeSessionState.CONNECTING
    assert first.live
    assert first.id != second.id
    assert first != second  # sessions compare by identity
    assert first.metadata == {"line": 1}


def test_the_mocks_are_back_ends() -> None:
    provider = MockRealtimeProvider("gpt-realtime", full_duplex=True)
    assert isinstance(provider, RealtimeProvider)
    assert isinstance(MockRealtimeTransport(), RealtimeTransport)
    assert (provider.model, provider.full_duplex, provider.name) == ("gpt-realtime", True, "mock")
    assert MockRealtimeProvider().model == "mock"
    assert MockRealtimeProvider().full_duplex is False


async def test_the_provider_records_what_it_is_asked() -> None:
    provider, session = MockRealtimeProvider(), new_session()
    tools = [{"name": "Ask", "description": "", "parameters": {"type": "object"}}]
    await provider.connect(session, system_prompt="Be brief.", tools=tools)
    await provider.submit_tool_result(session, "call-1", "42")
    await provider.inject_context(session, "context", silent=True)
    await provider.disconnect(session)

    assert [call.method for call in provider.calls] == [
        "connect",
        "submit_tool_result",
        "inject_context",
        "disconnect",
    ]
    assert provider.calls[0] == MockCall(
        "connect", {"session": session, "system_prompt": "Be brief.", "tools": tools}
    )
    assert provider.tool_results == [(session.id, "call-1", "42")]
    assert provider.injected == [(session.id, "context")]
    assert provider.sessions == {}


async def test_simulated_events_reach_every_callback_in_order() -> None:
    provider, session = MockRealtimeProvider(), new_session()
    seen: list[tuple[Any, ...]] = []

    async def on_call(s: RealtimeSession, call_id: str, name: str, args: dict[str, Any]) -> None:
        seen.append(("call", s, call_id, name, args))

    async def on_text(s: RealtimeSession, text: str, role: str, final: bool) -> None:
        seen.append(("text", text, role, final))

    async def on_cancel(s: RealtimeSession, call_ids: list[str]) -> None:
        seen.append(("cancel", call_ids))

    async def on_error(s: RealtimeSession, code: str, message: str) -> None:
        seen.append(("error", code, message))

    provider.on_tool_call(on_call)
    provider.on_transcription(on_text)
    provider.on_tool_call_cancelled(on_cancel)
    provider.on_error(on_error)
    await provider.simulate_tool_call(session, "call-1", "Ask", {"question": "?"})
    await provider.simulate_transcription(session, "hello", role="user", final=False)
    await provider.simulate_tool_call_cancellation(session, ["call-1"])
    await provider.simulate_error(session, "boom", "it broke")

    assert seen == [
        ("call", session, "call-1", "Ask", {"question": "?"}),
        ("text", "hello", "user", False),
        ("cancel", ["call-1"]),
        ("error", "boom", "it broke"),
    ]


async def test_an_unregistered_callback_hears_nothing() -> None:
    provider, session = MockRealtimeProvider(), new_session()
    seen: list[str] = []

    async def on_text(s: RealtimeSession, text: str, role: str, final: bool) -> None:
        seen.append(text)

    remove = provider.on_transcription(on_text)
    await provider.simulate_transcription(session, "one")
    remove()
    remove()
    await provider.simulate_transcription(session, "two")
    assert seen == ["one"]


async def test_a_failing_callback_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider, session = MockRealtimeProvider(), new_session()
    seen: list[str] = []

    async def broken(s: RealtimeSession, text: str, role: str, final: bool) -> None:
        raise RuntimeError("listener bug")

    async def working(s: RealtimeSession, text: str, role: str, final: bool) -> None:
        seen.append(text)

    provider.on_transcription(broken)
    provider.on_transcription(working)
    with caplog.at_level(logging.ERROR, logger="roomkit.voice.realtime"):
        await provider.simulate_transcription(session, "hi")

    assert seen == ["hi"]
    assert any("listener bug" in (r.exc_text or "") for r in caplog.records)


def test_a_callback_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        MockRealtimeProvider().on_tool_call("not a function")  # type: ignore[arg-type]


async def test_waiting_for_a_result_returns_once_it_is_submitted() -> None:
    provider, session = MockRealtimeProvider(), new_session()
    waiting = asyncio.create_task(provider.wait_for_tool_result("call-2"))
    injected = asyncio.create_task(provider.wait_for_injection("Result of"))
    await provider.submit_tool_result(session, "call-1", "first")
    await asyncio.sleep(0)
    assert not waiting.done()
    await provider.submit_tool_result(session, "call-2", "second")
    await provider.inject_context(session, "Result of Ask: yes")

    assert await waiting == "second"
    assert await injected == "Result of Ask: yes"


async def test_the_transport_records_sessions_and_plays_a_hang_up() -> None:
    transport, session = MockRealtimeTransport(), new_session()
    gone: list[RealtimeSession] = []

    async def on_gone(s: RealtimeSession) -> None:
        gone.append(s)

    transport.on_client_disconnected(on_gone)
    await transport.accept(session, "phone")
    assert transport.connections == {session.id: "phone"}
    await transport.simulate_client_disconnect(session)
    assert gone == [session]
    assert transport.connections == {}
    await transport.disconnect(session)
    assert [call.method for call in transport.calls] == ["accept", "disconnect"]

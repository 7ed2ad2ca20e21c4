"""OpenAIRealtimeProvider on its own, against the fake Realtime API: opening a session and
how it fails, the events it reads, what it sends, and closing."""

from __future__ import annotations

import asyncio
import base64
import importlib
import logging
import re
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_openai_realtime import API_KEY, FakeConnection, FakeOpenAIRealtime, error_event
from openai_realtime_harness import outputs, text_of

from roomkit._extras import install_command
from roomkit.core.exceptions import (
    ProviderAuthError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from roomkit.voice.realtime.base import RealtimeProvider, RealtimeSession
from roomkit.voice.realtime.openai import DEFAULT_URL, OpenAIRealtimeProvider

TOOLS = [{"name": "lookup", "description": "Look up.", "parameters": {"type": "object"}}]


def new_session() -> RealtimeSession:
    return RealtimeSession.new("r1", "alice", "voice")


@pytest.fixture
async def connected(
    fake: FakeOpenAIRealtime, provider: OpenAIRealtimeProvider
) -> AsyncIterator[tuple[RealtimeSession, FakeConnection]]:
    """A session connected through ``provider``, and its connection as the API sees it."""
    session = new_session()
    await provider.connect(session, system_prompt="Be brief.", tools=TOOLS)
    yield session, await fake.connection()
    await provider.disconnect(session)


# -- construction ---------------------------------------------------------------------------


def test_the_provider_is_a_realtime_provider() -> None:
    provider = OpenAIRealtimeProvider(api_key="sk-1")
    assert isinstance(provider, RealtimeProvider)
    assert (provider.name, provider.model) == ("openai", "gpt-realtime")
    assert provider.url == f"{DEFAULT_URL}?model=gpt-realtime"
    assert "sk-1" not in repr(provider)


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert OpenAIRealtimeProvider()._api_key == "sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
        OpenAIRealtimeProvider()


def test_the_url_carries_the_model_unless_it_names_one() -> None:
    provider = OpenAIRealtimeProvider(api_key="k", model="gpt-realtime-mini", url="ws://h/rt?x=1")
    assert provider.url == "ws://h/rt?x=1&model=gpt-realtime-mini"
    named = OpenAIRealtimeProvider(api_key="k", url="wss://h/rt?model=mine")
    assert named.url == "wss://h/rt?model=mine"


@pytest.mark.parametrize(
    "options",
    [
        {"url": "https://api.openai.com/v1/realtime"},
        {"connect_timeout": 0},
        {"connect_timeout": True},
        {"model": ""},
    ],
)
def test_bad_settings_are_refused_at_once(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be"):
        OpenAIRealtimeProvider(api_key="k", **options)


# -- opening a session ----------------------------------------------------------------------


async def test_connect_returns_once_the_api_applied_the_configuration(
    fake: FakeOpenAIRealtime, provider: OpenAIRealtimeProvider
) -> None:
    session = new_session()
    await provider.connect(session, system_prompt="Be brief.", tools=TOOLS)

    api = await fake.connection()
    assert api.log[:3] == [
        ("out", "session.created"),
        ("in", "session.update"),
        ("out", "session.updated"),
    ]
    sent = api.received[0]["session"]
    assert sent["instructions"] == "Be brief."
    assert sent["tools"] == [{"type": "function", **TOOLS[0]}]
    assert sent["audio"]["input"] == {"transcription": {"model": "gpt-4o-mini-transcribe"}}
    with pytest.raises(RuntimeError, match="already connected"):
        await provider.connect(session)
    await provider.disconnect(session)


async def test_without_instructions_or_transcription_the_api_keeps_its_defaults(
    fake: FakeOpenAIRealtime,
) -> None:
    provider = OpenAIRealtimeProvider(api_key=API_KEY, url=fake.url, transcription_model=None)
    session = new_session()
    await provider.connect(session)

    sent = (await fake.connection()).received[0]["session"]
    assert sent == {"type": "realtime", "tools": [], "tool_choice": "auto"}
    await provider.disconnect(session)


@pytest.mark.parametrize("refuse_key_with", ["event", "handshake"])
async def test_a_refused_key_is_an_auth_error(refuse_key_with: str) -> None:
    async with FakeOpenAIRealtime(refuse_key_with=refuse_key_with) as fake:  # type: ignore[arg-type]
        provider = OpenAIRealtimeProvider(api_key="sk-wrong", url=fake.url)
        session = new_session()
        with pytest.raises(ProviderAuthError, match="Incorrect API key") as caught:
            await provider.connect(session)

    assert caught.value.provider == "openai"
    assert caught.value.status_code == (401 if refuse_key_with == "handshake" else None)
    with pytest.raises(RuntimeError, match="not connected"):
        await provider.submit_tool_result(session, "call_1", "{}")


async def test_an_unreachable_api_is_a_timeout_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAIRealtimeProvider(api_key="k", url=f"ws://127.0.0.1:{port}/v1/realtime")

    with pytest.raises(ProviderTimeoutError, match="Could not reach the OpenAI Realtime API"):
        await provider.connect(new_session())


async def test_an_api_that_never_applies_the_configuration_times_out(
    fake: FakeOpenAIRealtime,
) -> None:
    fake.ignore_session_update = True
    provider = OpenAIRealtimeProvider(api_key=API_KEY, url=fake.url, connect_timeout=0.2)
    session = new_session()

    with pytest.raises(ProviderTimeoutError, match="did not open the session"):
        await provider.connect(session)
    await (await fake.connection()).closed.wait()
    with pytest.raises(RuntimeError, match="not connected"):
        await provider.inject_context(session, "hello")


async def test_a_refused_configuration_is_a_request_error(
    fake: FakeOpenAIRealtime, provider: OpenAIRealtimeProvider
) -> None:
    fake.refuse_session_update = error_event("invalid_value", "Invalid tool schema.")

    with pytest.raises(ProviderRequestError, match="Invalid tool schema"):
        await provider.connect(new_session(), tools=TOOLS)
    await (await fake.connection()).closed.wait()


# -- events from the API --------------------------------------------------------------------


async def test_transcripts_reach_the_listeners_under_both_event_names(
    provider: OpenAIRealtimeProvider, connected: tuple[RealtimeSession, FakeConnection]
) -> None:
    session, api = connected
    heard: asyncio.Queue[tuple[RealtimeSession, str, str, bool]] = asyncio.Queue()

    async def listen(s: RealtimeSession, text: str, role: str, final: bool) -> None:
        heard.put_nowait((s, text, role, final))

    provider.on_transcription(listen)
    await api.push_assistant_transcript("Hello.")
    await api.push_assistant_transcript("Hi again.", legacy=True)
    await api.push_user_transcript("What time is it?")

    got = [await heard.get() for _ in range(5)]
    assert all(s is session for s, *_ in got)
    assert [rest for _, *rest in got] == [
        ["Hello.", "assistant", False],
        ["Hello.", "assistant", True],
        ["Hi again.", "assistant", False],
        ["Hi again.", "assistant", True],
        ["What time is it?", "user", True],
    ]


async def test_an_event_nested_past_the_parser_is_skipped_and_the_next_ones_are_read(
    provider: OpenAIRealtimeProvider, connected: tuple[RealtimeSession, FakeConnection]
) -> None:
    _, api = connected
    heard: asyncio.Queue[str] = asyncio.Queue()

    async def listen(s: RealtimeSession, text: str, role: str, final: bool) -> None:
        if final:
            heard.put_nowait(text)

    provider.on_transcription(listen)
    await api.socket.send('{"type": "error", "error": ' + "[" * 100_000 + "]" * 100_000 + "}")
    await api.push_assistant_transcript("Still here.")

    assert await heard.get() == "Still here."


async def test_a_function_call_reaches_the_listeners_once_with_parsed_arguments(
    provider: OpenAIRealtimeProvider, connected: tuple[RealtimeSession, FakeConnection]
) -> None:
    _, api = connected
    calls: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()

    async def on_call(s: RealtimeSession, call_id: str, name: str, arguments: Any) -> None:
        calls.put_nowait((call_id, name, arguments))

    provider.on_tool_call(on_call)
    await api.push_function_call("call_1", "lookup", '{"key": "weather"}')
    await api.push_function_call("call_2", "lookup", "")
    await api.push_function_call("call_3", "lookup", "[1, 2]")
    await api.push_function_call("call_4", "lookup", "{oops")

    got = [await calls.get() for _ in range(4)]
    assert got == [
        ("call_1", "lookup", {"key": "weather"}),
        ("call_2", "lookup", {}),
        ("call_3", "lookup", [1, 2]),
        ("call_4", "lookup", "{oops"),
    ]
    assert calls.empty()


async def test_an_error_event_reaches_the_error_listeners(
    provider: OpenAIRealtimeProvider,
    connected: tuple[RealtimeSession, FakeConnection],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, api = connected
    errors: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    async def on_error(s: RealtimeSession, code: str, message: str) -> None:
        errors.put_nowait((code, message))

    provider.on_error(on_error)
    with caplog.at_level(logging.WARNING, logger="roomkit.voice.realtime.openai"):
        await api.send(error_event("conversation_already_has_active_response", "Busy."))
        assert await errors.get() == ("conversation_already_has_active_response", "Busy.")
    assert "Busy." in caplog.text


async def test_the_callers_audio_goes_in_and_the_models_audio_comes_out(
    provider: OpenAIRealtimeProvider, connected: tuple[RealtimeSession, FakeConnection]
) -> None:
    session, api = connected
    spoken: asyncio.Queue[bytes] = asyncio.Queue()

    async def on_audio(s: RealtimeSession, chunk: bytes) -> None:
        spoken.put_nowait(chunk)

    provider.on_audio(on_audio)
    await provider.send_audio(session, b"\x00\x01\x02")
    appended = await api.wait_for("input_audio_buffer.append")
    await api.push_audio(base64.b64encode(b"\x10\x20").decode())

    assert base64.b64decode(appended["audio"]) == b"\x00\x01\x02"
    assert await spoken.get() == b"\x10\x20"
    with pytest.raises(TypeError):
        await provider.send_audio(session, "not bytes")  # type: ignore[arg-type]


# -- what the provider sends ----------------------------------------------------------------


async def test_a_result_is_an_output_item_then_a_response(
    provider: OpenAIRealtimeProvider, connected: tuple[RealtimeSession, FakeConnection]
) -> None:
    session, api = connected
    await provider.submit_tool_result(session, "call_1", '{"value": 42}')

    await api.wait_for("response.create")
    assert outputs(api) == [
        {"type": "function_call_output", "call_id": "call_1", "output": '{"value": 42}'}
    ]
    assert api.received_types[-2:] == ["conversation.item.create", "response.create"]


async def test_context_is_a_system_message_with_a_response_only_when_not_silent(
    provider: OpenAIRealtimeProvider, connected: tuple[RealtimeSession, FakeConnection]
) -> None:
    session, api = connected
    await provider.inject_context(session, "The caller is on a train.")
    await provider.inject_context(session, "Say hello.", silent=False)

    await api.wait_for("response.create")
    messages = [text_of(e) for e in api.received if e["type"] == "conversation.item.create"]
    assert messages == ["The caller is on a train.", "Say hello."]
    assert api.received_types[-3:] == [
        "conversation.item.create",
        "conversation.item.create",
        "response.create",
    ]


async def test_disconnect_closes_the_socket_once_and_reports_no_loss(
    fake: FakeOpenAIRealtime, provider: OpenAIRealtimeProvider
) -> None:
    session = new_session()
    lost: list[str] = []

    async def on_lost(s: RealtimeSession, reason: str) -> None:
        lost.append(reason)

    session.on_lost(on_lost)
    await provider.connect(session)
    api = await fake.connection()

    await provider.disconnect(session)
    await provider.disconnect(session)

    await api.closed.wait()
    assert lost == []
    with pytest.raises(RuntimeError, match="not connected"):
        await provider.submit_tool_result(session, "call_1", "{}")


async def test_a_disconnect_while_connecting_fails_the_connect_with_a_provider_error(
    fake: FakeOpenAIRealtime, provider: OpenAIRealtimeProvider
) -> None:
    fake.ignore_session_update = True
    session = new_session()
    connecting = asyncio.create_task(provider.connect(session))
    api = await fake.connection()
    await api.wait_for("session.update")

    await provider.disconnect(session)

    with pytest.raises(ProviderTimeoutError, match="closed before the session opened"):
        await connecting
    await api.closed.wait()


async def test_a_dropped_connection_is_reported_lost_and_takes_nothing_more(
    provider: OpenAIRealtimeProvider, connected: tuple[RealtimeSession, FakeConnection]
) -> None:
    session, api = connected
    lost: asyncio.Queue[str] = asyncio.Queue()
    errors: list[str] = []

    async def on_lost(s: RealtimeSession, reason: str) -> None:
        lost.put_nowait(reason)

    async def on_error(s: RealtimeSession, code: str, message: str) -> None:
        errors.append(code)

    session.on_lost(on_lost)
    provider.on_error(on_error)
    await api.drop()

    assert "connection to the OpenAI Realtime API was lost" in await lost.get()
    assert errors == ["connection_lost"]
    with pytest.raises(ProviderTimeoutError):
        await provider.inject_context(session, "anyone there?")
    await provider.disconnect(session)


def test_without_websockets_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "websockets.asyncio.client", None)
    monkeypatch.delitem(sys.modules, "roomkit.voice.realtime.openai")
    needed = r"needs the realtime extra .*: " + re.escape(install_command("realtime"))
    with pytest.raises(ImportError, match=needed):
        importlib.import_module("roomkit.voice.realtime.openai")


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "handshake with HTTP 200"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "did not open a WebSocket"),
    ],
    ids=["plain-http", "not-http"],
)
async def test_a_server_that_is_not_a_websocket_is_a_response_error(
    answer: bytes, words: str
) -> None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(reply, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = OpenAIRealtimeProvider(api_key="k", url=f"ws://127.0.0.1:{port}/v1/realtime")
    async with server:
        with pytest.raises(ProviderResponseError, match=words):
            await provider.connect(new_session())

"""A RealtimeVoiceChannel on the OpenAI provider, against the fake Realtime API.

The model's calls arrive as the API's events; the person is asked through
ON_USER_INPUT_REQUIRED; the answer goes back as the API's events.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from fake_openai_realtime import FakeOpenAIRealtime
from openai_realtime_harness import ANSWER, ASK, LOOKUP, VoiceOnOpenAI, outputs, text_of
from openai_realtime_shapes import check_client_event, check_server_event
from pydantic import ValidationError
from tests.channels.realtime_harness import attach

from roomkit import RoomKit
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.core.exceptions import ProviderTimeoutError
from roomkit.models.enums import ChannelType
from roomkit.voice.realtime.base import RealtimeSessionState
from roomkit.voice.realtime.mock import MockRealtimeTransport
from roomkit.voice.realtime.openai import OpenAIRealtimeProvider


async def test_the_session_declares_the_instructions_and_every_tool(h: VoiceOnOpenAI) -> None:
    update = h.api.received[0]
    assert update["type"] == "session.update"
    session = update["session"]
    assert session["type"] == "realtime"
    assert session["instructions"] == "You help callers."
    assert session["tool_choice"] == "auto"
    assert session["audio"]["output"] == {"voice": "marin"}
    assert {tool["name"]: tool for tool in session["tools"]} == {
        tool.name: {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        for tool in (LOOKUP, ASK)
    }
    assert h.api.headers["Authorization"] == "Bearer sk-test-key"
    assert h.api.path == "/v1/realtime?model=gpt-realtime"


async def test_a_function_call_asks_the_caller_and_submits_the_answer(h: VoiceOnOpenAI) -> None:
    await h.api.push_function_call("call_1", "Ask", '{"question": "Which color?"}')

    event = await h.questions.get()
    assert event.channel_type is ChannelType.REALTIME_VOICE
    assert (event.tool_name, event.arguments) == ("Ask", {"question": "Which color?"})
    assert (event.tool_call_id, event.actor_id, event.room_id) == ("call_1", "alice", "r1")
    assert h.human.handler.resolve(event.pending_id, ANSWER)

    await h.api.wait_for("response.create")
    assert outputs(h.api) == [
        {"type": "function_call_output", "call_id": "call_1", "output": ANSWER}
    ]
    answered = h.api.log.index(("in", "conversation.item.create"))
    assert h.api.log.index(("in", "response.create")) > answered
    assert (await h.report("Ask")).outcome == "served"


async def test_a_host_tool_call_is_served_and_answered(h: VoiceOnOpenAI) -> None:
    await h.api.push_function_call("call_2", "lookup", '{"key": "weather"}')

    await h.api.wait_for("response.create")
    [output] = outputs(h.api)
    assert output["call_id"] == "call_2"
    assert json.loads(output["output"]) == {"value": 42, "key": "weather"}
    assert (await h.report("lookup")).outcome == "served"
    assert h.questions.empty()


@pytest.mark.parametrize("legacy", [False, True], ids=["current-names", "older-names"])
async def test_a_spoken_call_is_served_and_its_result_injected_silently(
    h: VoiceOnOpenAI, legacy: bool
) -> None:
    spoken = 'One moment. call:Ask{question:"Which color?"}'
    await h.api.push_assistant_transcript(spoken, legacy=legacy)

    event = await h.questions.get()
    assert event.channel_type is ChannelType.REALTIME_VOICE
    assert event.arguments == {"question": "Which color?"}
    h.human.handler.resolve(event.pending_id, ANSWER)
    injected = await h.api.wait_for(
        "conversation.item.create", lambda e: (text_of(e) or "").startswith("Result of")
    )
    await h.flush()

    assert text_of(injected) == f"Result of Ask: {ANSWER}"
    assert injected["item"]["role"] == "system"
    assert "response.create" not in h.api.received_types
    assert outputs(h.api) == []
    assert (await h.report("Ask")).outcome == "served"


@pytest.mark.parametrize(
    "arguments",
    ['{"key": "weath', '{"key": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    ids=["cut short", "nested past the parser"],
)
async def test_arguments_that_are_not_json_are_refused_and_the_model_reads_why(
    h: VoiceOnOpenAI, arguments: str
) -> None:
    await h.api.push_function_call("call_3", "lookup", arguments)

    await h.api.wait_for("response.create")
    [output] = outputs(h.api)
    assert output["call_id"] == "call_3"
    assert json.loads(output["output"]) == {
        "error": "Invalid arguments for 'lookup': expected an object of arguments, got str"
    }
    assert (await h.report("lookup")).outcome == "refused"


async def test_calls_made_together_ask_for_one_response_after_the_last_result(
    h: VoiceOnOpenAI,
) -> None:
    await h.api.push_function_calls(
        ("call_4", "lookup", '{"key": "weather"}'),
        ("call_5", "Ask", '{"question": "Which color?"}'),
    )
    event = await h.questions.get()
    await h.api.wait_for("conversation.item.create", lambda e: e["item"].get("call_id") == "call_4")
    await h.flush("the host tool answered")
    assert "response.create" not in h.api.received_types

    h.human.handler.resolve(event.pending_id, ANSWER)
    await h.api.wait_for("response.create")
    await h.flush("the person answered")

    assert [output["call_id"] for output in outputs(h.api)] == ["call_4", "call_5"]
    assert h.api.received_types.count("response.create") == 1


async def test_a_result_waits_for_the_running_response_to_finish(h: VoiceOnOpenAI) -> None:
    response_id = await h.api.push_function_call(
        "call_6", "lookup", '{"key": "weather"}', finish=False
    )
    await h.api.wait_for("conversation.item.create", lambda e: e["item"].get("call_id") == "call_6")
    await h.flush()
    assert "response.create" not in h.api.received_types

    await h.api.finish_response(response_id)

    await h.api.wait_for("response.create")


async def test_a_repeated_function_call_is_served_once(h: VoiceOnOpenAI) -> None:
    await h.api.push_function_call("call_7", "lookup", '{"key": "weather"}')
    await h.api.wait_for("response.create")
    await h.api.push_function_call("call_7", "lookup", '{"key": "weather"}')
    await h.flush()

    assert [output["call_id"] for output in outputs(h.api)] == ["call_7"]
    assert len(h.reports) == 1


async def test_a_dropped_connection_withdraws_the_request_and_sends_nothing(
    h: VoiceOnOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    await h.api.push_function_call("call_8", "Ask", '{"question": "Which color?"}')
    event = await h.questions.get()

    with caplog.at_level(logging.WARNING):
        await h.api.drop()
        report = await h.report("Ask")

    assert report.outcome == "cancelled"
    assert json.loads(report.result)["hint"] == (
        "The connection to the model was lost before its result."
    )
    assert event.pending_id not in h.human.handler.pending
    assert not h.human.handler.resolve(event.pending_id, ANSWER)
    with pytest.raises(ProviderTimeoutError):
        await h.provider.submit_tool_result(h.session, "call_8", ANSWER)
    assert outputs(h.api) == []
    assert "connection_lost" in caplog.text
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)

    await h.voice.end_session(h.session)
    assert h.voice.sessions == []
    assert len(h.reports) == 1


async def test_a_spoken_call_is_withdrawn_too_when_the_connection_drops(h: VoiceOnOpenAI) -> None:
    await h.api.push_assistant_transcript('call:Ask{question:"Which color?"}')
    event = await h.questions.get()

    await h.api.drop()

    assert (await h.report("Ask")).outcome == "cancelled"
    assert not h.human.handler.resolve(event.pending_id, ANSWER)
    assert all(not (text_of(e) or "").startswith("Result of") for e in h.api.received)


async def test_the_callers_speech_is_transcribed_and_never_serves_a_call(
    h: VoiceOnOpenAI,
) -> None:
    heard: list[tuple[str, str, bool]] = []

    async def listen(session: object, text: str, role: str, final: bool) -> None:
        heard.append((text, role, final))

    h.provider.on_transcription(listen)
    await h.api.push_user_transcript('call:lookup{key:"weather"}')
    await h.api.push_function_call("call_9", "lookup", '{"key": "sync"}')
    report = await h.report("lookup")

    assert ('call:lookup{key:"weather"}', "user", True) in heard
    assert report.tool_call_id == "call_9"


async def test_every_event_both_ways_has_the_vendors_shape(h: VoiceOnOpenAI) -> None:
    await h.api.push_function_call("call_10", "lookup", '{"key": "weather"}')
    await h.api.wait_for("response.create")
    await h.api.push_assistant_transcript('call:Ask{question:"Which color?"}')
    await h.api.push_assistant_transcript("Older names.", legacy=True)
    await h.api.push_user_transcript("Blue.")
    event = await h.questions.get()
    h.human.handler.resolve(event.pending_id, ANSWER)
    await h.provider.send_audio(h.session, b"\x00\x01")
    await h.flush()

    for sent in h.api.received:
        check_client_event(sent)
    for received in h.api.sent:
        check_server_event(received)
    assert set(h.api.received_types) == {
        "session.update",
        "conversation.item.create",
        "response.create",
        "input_audio_buffer.append",
    }
    assert {
        "session.created",
        "session.updated",
        "response.function_call_arguments.done",
        "response.output_audio_transcript.done",
        "response.audio_transcript.done",
        "conversation.item.input_audio_transcription.completed",
    } <= {event["type"] for event in h.api.sent}


@pytest.mark.parametrize(
    ("check", "event"),
    [
        (check_client_event, {"type": "response.creat"}),
        (
            check_client_event,
            {"type": "session.update", "session": {"type": "realtime", "tool_choise": "auto"}},
        ),
        (
            check_client_event,
            {
                "type": "conversation.item.create",
                "item": {"type": "function_call_output", "call_id": "c"},
            },
        ),
        (check_server_event, {"type": "response.function_call_arguments.done", "call_id": "c"}),
    ],
    ids=["unknown-type", "misspelt-field", "missing-field", "server-missing-fields"],
)
def test_the_shape_check_refuses_what_the_api_does_not_define(
    check: Callable[[dict[str, Any]], object], event: dict[str, Any]
) -> None:
    with pytest.raises((ValidationError, AssertionError)):
        check(event)


async def test_a_caller_hanging_up_while_the_session_opens_gets_it_ended(
    fake: FakeOpenAIRealtime, provider: OpenAIRealtimeProvider
) -> None:
    fake.ignore_session_update = True
    transport = MockRealtimeTransport()
    kit = RoomKit()
    voice = RealtimeVoiceChannel("voice", provider=provider, transport=transport)
    await attach(kit, voice)
    starting = asyncio.create_task(voice.start_session("r1", "alice", "alice-phone"))
    api = await fake.connection()
    await api.wait_for("session.update")

    [session] = [call.args["session"] for call in transport.calls if call.method == "accept"]
    await transport.simulate_client_disconnect(session)

    assert (await starting) is session
    assert session.state is RealtimeSessionState.ENDED
    assert voice.sessions == []
    await api.closed.wait()
    await kit.close()

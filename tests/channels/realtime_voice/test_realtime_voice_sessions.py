"""A voice channel's construction, its sessions' life, and what it declares to each session."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.channels.realtime_harness import (
    ANSWER,
    ASK,
    LOOKUP,
    SLOW,
    SlowToConnect,
    attach,
    attached_on_sqlite,
    body,
    lookup_handler,
    new_human,
)
from tests.channels.realtime_voice.voice_harness import MakeVoice

from roomkit import AITool, HumanInputToolHandler, RoomKit
from roomkit.channels.realtime_voice import RealtimeVoiceChannel
from roomkit.core.exceptions import ChannelClosedError
from roomkit.voice.realtime.base import RealtimeSession, RealtimeSessionState
from roomkit.voice.realtime.mock import MockRealtimeProvider, MockRealtimeTransport

HUMAN_LOGGER = "roomkit.tools.human_input"


def channel(**options: Any) -> RealtimeVoiceChannel:
    options.setdefault("provider", MockRealtimeProvider())
    options.setdefault("transport", MockRealtimeTransport())
    return RealtimeVoiceChannel("voice", **options)


async def test_a_session_declares_the_host_and_human_tools_to_the_model(make: MakeVoice) -> None:
    h = await make()
    [connect] = [call for call in h.provider.calls if call.method == "connect"]

    assert connect.args["session"] is h.session
    assert connect.args["system_prompt"] == "You help callers."
    assert connect.args["tools"] == [
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        for tool in (ASK, LOOKUP, SLOW)
    ]
    assert h.transport.connections == {h.session.id: "alice-phone"}


async def test_a_session_belongs_to_its_room_and_caller(make: MakeVoice) -> None:
    h = await make()
    session = h.session

    assert (session.room_id, session.participant_id, session.channel_id) == ("r1", "alice", "voice")
    assert session.state is RealtimeSessionState.ACTIVE
    assert h.voice.sessions == [session]
    assert "alice" in (await h.kit.room_context("r1")).participant_ids


async def test_session_metadata_is_kept(make: MakeVoice) -> None:
    h = await make()
    session = await h.voice.start_session("r1", "bob", "bob-phone", metadata={"line": 2})
    assert session.metadata == {"line": 2}
    assert session.id != h.session.id


async def test_ending_a_session_hangs_up_both_sides_once(make: MakeVoice) -> None:
    h = await make()
    await h.voice.end_session(h.session)
    await h.voice.end_session(h.session)

    assert h.session.state is RealtimeSessionState.ENDED
    assert [c.method for c in h.provider.calls if c.method == "disconnect"] == ["disconnect"]
    assert [c.method for c in h.transport.calls if c.method == "disconnect"] == ["disconnect"]
    assert h.voice.sessions == []


async def test_events_of_an_ended_session_are_ignored(make: MakeVoice) -> None:
    h = await make()
    await h.voice.end_session(h.session)
    await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "Color?"})

    assert h.pending == {}
    assert h.sent_to_provider() == []


async def test_a_session_needs_a_registered_channel() -> None:
    voice = channel()
    with pytest.raises(RuntimeError, match="register_channel"):
        await voice.start_session("r1", "alice", None)


async def test_a_session_needs_the_channel_attached_to_its_room() -> None:
    kit = RoomKit()
    kit.register_channel(channel())
    await kit.create_room("r1")
    voice = kit.get_channel("voice")
    assert isinstance(voice, RealtimeVoiceChannel)

    with pytest.raises(KeyError, match="attach_channel"):
        await voice.start_session("r1", "alice", None)
    with pytest.raises(KeyError, match="No room"):
        await voice.start_session("nowhere", "alice", None)
    await kit.close()


async def test_a_closed_channel_starts_no_session(make: MakeVoice) -> None:
    h = await make()
    await h.voice.close()
    with pytest.raises(RuntimeError, match="closed"):
        await h.voice.start_session("r1", "bob", None)


async def test_a_provider_that_fails_to_connect_leaves_no_session() -> None:
    class Refusing(MockRealtimeProvider):
        async def connect(
            self,
            session: RealtimeSession,
            *,
            system_prompt: str | None = None,
            tools: Sequence[dict[str, Any]] = (),
        ) -> None:
            raise ConnectionError("model unavailable")

    kit = RoomKit()
    transport = MockRealtimeTransport()
    voice = channel(provider=Refusing(), transport=transport)
    kit.register_channel(voice)
    await kit.create_room("r1")
    await kit.attach_channel("r1", "voice")

    with pytest.raises(ConnectionError):
        await voice.start_session("r1", "alice", "alice-phone")
    assert voice.sessions == []
    assert transport.connections == {}
    await kit.close()


async def test_a_caller_hanging_up_while_accepted_leaves_no_session() -> None:
    class HangsUpAtOnce(MockRealtimeTransport):
        async def accept(self, session: RealtimeSession, connection: Any) -> None:
            await super().accept(session, connection)
            await self.simulate_client_disconnect(session)

    kit = RoomKit()
    provider = MockRealtimeProvider()
    voice = channel(provider=provider, transport=HangsUpAtOnce())
    await attach(kit, voice)

    session = await voice.start_session("r1", "alice", "alice-phone")
    assert session.state is RealtimeSessionState.ENDED
    assert voice.sessions == []
    assert provider.sessions == {}
    await kit.close()


async def test_a_caller_hanging_up_while_the_model_connects_leaves_it_disconnected() -> None:
    kit = RoomKit()
    provider, transport = SlowToConnect(), MockRealtimeTransport()
    voice = channel(provider=provider, transport=transport)
    await attach(kit, voice)

    starting = asyncio.create_task(voice.start_session("r1", "alice", "alice-phone"))
    await provider.connecting.wait()
    [accepted] = [call.args["session"] for call in transport.calls if call.method == "accept"]
    await transport.simulate_client_disconnect(accepted)
    provider.go_on.set()
    session = await starting

    assert session.state is RealtimeSessionState.ENDED
    assert voice.sessions == []
    assert provider.sessions == {}
    await kit.close()


async def test_a_channel_closed_while_a_session_reads_its_room_starts_no_session(
    tmp_path: Path,
) -> None:
    provider = MockRealtimeProvider()
    voice = channel(provider=provider)
    async with attached_on_sqlite(voice, tmp_path / "rooms.db"):
        starting = asyncio.create_task(voice.start_session("r1", "alice", "alice-phone"))
        await voice.close()

        with pytest.raises(ChannelClosedError):
            await starting
    assert voice.sessions == []
    assert provider.sessions == {}


def test_a_host_tool_under_a_persons_tool_name_is_refused() -> None:
    with pytest.raises(ValueError, match="serves itself"):
        channel(tools=[AITool(name="Ask")], human_input_handler=new_human())


def test_a_tool_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="given twice"):
        channel(tools=[LOOKUP, LOOKUP])


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="tool_timeout_seconds"):
        channel(tool_timeout_seconds=0)
    with pytest.raises(ValueError, match="tool_timeouts"):
        channel(tool_timeouts={"Ask": -1})


def test_back_ends_must_have_the_right_kind() -> None:
    with pytest.raises(TypeError, match="RealtimeProvider"):
        channel(provider=object())
    with pytest.raises(TypeError, match="RealtimeTransport"):
        channel(transport=object())
    with pytest.raises(TypeError, match="HumanInputToolHandler"):
        channel(human_input_handler=object())
    with pytest.raises(TypeError, match="reason"):
        channel(reasoning_backend=object())


def test_a_human_input_tool_handler_as_tool_handler_logs_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger=HUMAN_LOGGER):
        channel(tool_handler=HumanInputToolHandler({"Ask"}))

    [record] = [r for r in caplog.records if r.name == HUMAN_LOGGER]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "Channel voice serves a HumanInputToolHandler as its tool_handler: pass it as "
        "human_input_handler= so its own timeout, ON_USER_INPUT_REQUIRED and the channel's "
        "close apply to it"
    )


async def test_a_human_tool_never_offered_is_warned_about_once(
    make: MakeVoice, caplog: pytest.LogCaptureFixture
) -> None:
    human = HumanInputToolHandler({"Ask", "Confirm"}, tool_definitions=[ASK])
    with caplog.at_level(logging.WARNING, logger=HUMAN_LOGGER):
        h = await make(human=human)
        await h.voice.start_session("r1", "bob", "bob-phone")

    warnings = [r.getMessage() for r in caplog.records if "never offers" in r.getMessage()]
    assert warnings == [
        "Channel voice intercepts human-input tool(s) ['Confirm'] but never offers them to "
        "the model: declare them via HumanInputToolHandler(tool_definitions=...) or the "
        "channel's tools, or no human will ever be asked."
    ]


async def test_a_human_tool_declared_only_on_the_channel_is_still_served(
    make: MakeVoice,
) -> None:
    h = await make(human=HumanInputToolHandler({"Ask"}), tools=[ASK])
    await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_tool_result("call-1") == ANSWER


async def test_replacing_the_tool_handler_keeps_human_tools_served(make: MakeVoice) -> None:
    h = await make()
    h.voice.tool_handler = lookup_handler
    await h.provider.simulate_tool_call(h.session, "call-1", "Ask", {"question": "Color?"})
    await h.provider.simulate_tool_call(h.session, "call-2", "lookup", {"key": "k"})
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert await h.provider.wait_for_tool_result("call-2") == '{"value": 42, "key": "k"}'


async def test_a_call_without_a_handler_fails(make: MakeVoice) -> None:
    h = await make()
    await h.provider.simulate_tool_call(h.session, "call-1", "lookup", {})

    result = await h.provider.wait_for_tool_result("call-1")
    assert result == body("Tool 'lookup' has no handler on this channel.")
    assert (await h.report("lookup")).outcome == "failed"


async def test_a_raising_tool_fails_without_showing_its_message(make: MakeVoice) -> None:
    async def broken(name: str, arguments: dict[str, Any]) -> str:
        raise KeyError("secret")

    h = await make(tool_handler=broken)
    await h.provider.simulate_tool_call(h.session, "call-1", "lookup", {})

    assert await h.provider.wait_for_tool_result("call-1") == body(
        "Tool 'lookup' failed (KeyError)"
    )
    assert (await h.report("lookup")).error_detail == "KeyError: 'secret'"


async def test_a_tool_ending_its_own_session_finishes_and_sends_nothing(
    make: MakeVoice,
) -> None:
    holder: list[Any] = []

    async def hang_up(name: str, arguments: dict[str, Any]) -> str:
        h = holder[0]
        await h.voice.end_session(h.session)
        return "bye"

    h = await make(tool_handler=hang_up)
    holder.append(h)
    await h.provider.simulate_tool_call(h.session, "call-1", "lookup", {})
    report = await h.report("lookup")

    assert (report.outcome, report.result) == ("served", "bye")
    assert h.session.state is RealtimeSessionState.ENDED
    assert h.sent_to_provider() == []


async def test_a_provider_error_is_logged(
    make: MakeVoice, caplog: pytest.LogCaptureFixture
) -> None:
    h = await make()
    with caplog.at_level(logging.WARNING, logger="roomkit.channels.realtime_voice"):
        await h.provider.simulate_error(h.session, "rate_limit", "slow down")

    assert any("rate_limit: slow down" in r.getMessage() for r in caplog.records)
    assert h.session.state is RealtimeSessionState.ACTIVE


async def test_closing_the_kit_ends_every_session(make: MakeVoice) -> None:
    h = await make()
    other = await h.voice.start_session("r1", "bob", "bob-phone")
    await h.kit.close()

    assert h.session.state is other.state is RealtimeSessionState.ENDED
    assert h.transport.connections == {}
    assert h.provider.sessions == {}


async def test_calls_of_two_sessions_ask_their_own_callers(make: MakeVoice) -> None:
    h = await make()
    bob = await h.voice.start_session("r1", "bob", "bob-phone")
    await h.provider.simulate_tool_call(h.session, "a-1", "Ask", {"question": "Alice?"})
    await h.provider.simulate_tool_call(bob, "b-1", "Ask", {"question": "Bob?"})
    first, second = await h.questions.get(), await h.questions.get()

    assert {(first.actor_id, first.tool_call_id), (second.actor_id, second.tool_call_id)} == {
        ("alice", "a-1"),
        ("bob", "b-1"),
    }
    await h.voice.end_session(bob)
    by_actor = {first.actor_id: first, second.actor_id: second}
    assert not h.resolve(by_actor["bob"])
    assert h.resolve(by_actor["alice"])
    assert await h.provider.wait_for_tool_result("a-1") == ANSWER
    await asyncio.sleep(0)
    assert [call_id for _, call_id, _ in h.provider.tool_results] == ["a-1"]


def test_the_call_bound_is_ten_seconds_except_for_human_names() -> None:
    voice = channel(
        human_input_handler=new_human(),
        tool_handler=HumanInputToolHandler({"AskHost"}),
        tool_timeouts={"lookup": None},
    )
    assert voice.tool_timeout_seconds == 10.0
    assert voice.call_bound("AskHost") == 10.0
    assert voice.call_bound("Ask") is None
    assert voice.call_bound("lookup") is None
    assert channel(tool_timeouts={"Ask": 5}, human_input_handler=new_human()).call_bound("Ask") == 5


async def test_a_tool_of_a_session_may_close_the_channel(make: MakeVoice) -> None:
    """A close from inside the call it cuts ends the sessions; the call is reported cut."""
    channels: list[RealtimeVoiceChannel] = []

    async def shut_down(name: str, arguments: dict[str, Any]) -> str:
        await channels[0].close()
        raise AssertionError("the close cuts this call")

    h = await make(tool_handler=shut_down, tools=[LOOKUP])
    channels.append(h.voice)
    await h.provider.simulate_tool_call(h.session, "c1", "lookup", {"key": "k"})

    report = await h.report("lookup")

    assert report.cancelled is True
    assert h.provider.tool_results == []
    with pytest.raises(RuntimeError, match="closed"):
        await h.voice.start_session("r1", "bob", None)

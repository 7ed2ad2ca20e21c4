"""A conference's realtime calls: who is asked, under which bound, served by whom."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from tests.channels.conference.conference_harness import MakeConference, alice_in_conference
from tests.channels.realtime_harness import (
    ANSWER,
    ASK,
    LOOKUP,
    SLOW,
    SlowToConnect,
    body,
    lookup_handler,
    never_answers,
)

from roomkit import (
    AITool,
    ChannelType,
    HookTrigger,
    HumanInputToolHandler,
    PendingInputEvent,
    RoomKit,
)
from roomkit.testing import advance
from roomkit.voice.realtime.base import RealtimeSession, RealtimeSessionState

CONFERENCE = ChannelType.CONFERENCE


async def test_a_person_is_asked_and_the_provider_receives_the_answer(
    make: MakeConference,
) -> None:
    h = await make()
    session = await h.speak("alice")
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    assert (event.channel_type, event.room_id, event.channel_id) == (CONFERENCE, "r1", "conf")
    assert (event.actor_id, event.tool_call_id, event.tool_name) == ("alice", "call-1", "Ask")
    assert event.arguments == {"question": "Color?"}
    assert h.resolve(event)
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert h.provider.tool_results == [(session.id, "call-1", ANSWER)]
    report = await h.report("Ask")
    assert (report.outcome, report.channel_type, report.channel_id) == (
        "served",
        CONFERENCE,
        "conf",
    )
    assert (report.session, report.actor_id, report.room_id) == (session, "alice", "r1")


async def test_the_request_is_for_the_participant_who_spoke_last(make: MakeConference) -> None:
    h = await make()
    await h.speak("alice")
    await h.speak("bob")
    await h.call("call-1", "Ask", {"question": "Color?"})
    await h.speak("alice")
    await h.call("call-2", "Ask", {"question": "Size?"})

    first, second = await h.questions.get(), await h.questions.get()
    assert (first.tool_call_id, first.actor_id) == ("call-1", "bob")
    assert (second.tool_call_id, second.actor_id) == ("call-2", "alice")


async def test_a_session_the_application_starts_asks_for_nobody(make: MakeConference) -> None:
    h = await make()
    session = await h.conference.start_realtime("r1")
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    assert event.actor_id is None
    assert h.resolve(event)
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert await h.conference.start_realtime("r1") is session


async def test_a_new_session_asks_for_nobody_until_someone_speaks(make: MakeConference) -> None:
    h = await make()
    await h.speak("alice")
    await h.conference.end_realtime("r1")
    await h.conference.start_realtime("r1")
    await h.call("call-1", "Ask", {"question": "Color?"})
    await h.speak("bob")
    await h.call("call-2", "Ask", {"question": "Size?"})

    assert (await h.questions.get()).actor_id is None
    assert (await h.questions.get()).actor_id == "bob"


async def test_a_participant_who_left_is_not_asked(make: MakeConference) -> None:
    h = await make()
    await h.speak("alice")
    await h.speak("bob")
    await h.backend.simulate_participant_left("r1", "alice")
    await h.call("call-1", "Ask", {"question": "Color?"})
    await h.backend.simulate_participant_left("r1", "bob")
    await h.call("call-2", "Ask", {"question": "Size?"})

    assert (await h.questions.get()).actor_id == "bob"
    assert (await h.questions.get()).actor_id is None


async def test_every_session_declares_the_human_tools(make: MakeConference) -> None:
    h = await make()
    await h.speak("alice")
    await h.speak("bob")

    connects = [call for call in h.provider.calls if call.method == "connect"]
    assert len(connects) == 1
    declared = connects[0].args["tools"]
    assert [tool["name"] for tool in declared] == ["Ask", "lookup", "slow"]
    assert declared[0]["parameters"] == ASK.parameters
    assert connects[0].args["system_prompt"] == "You help the room."


async def test_a_human_tool_declared_on_the_configs_tools_asks_a_person(
    make: MakeConference,
) -> None:
    """The handler gives no definition: the one on ``tools=`` declares it, the handler serves
    it, without the host call bound."""
    ask = {"name": "ask", "parameters": {"type": "object"}}
    h = await make(human=HumanInputToolHandler({"ask"}), tools=[ask], tool_handler=never_answers)
    session = await h.speak("alice")
    await h.call("call-1", "ask", {"question": "Color?"})
    event = await h.questions.get()
    await advance(60)

    assert (event.tool_name, event.channel_type, event.actor_id) == ("ask", CONFERENCE, "alice")
    assert h.resolve(event)
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    connect = next(call for call in h.provider.calls if call.method == "connect")
    assert [tool["name"] for tool in connect.args["tools"]] == ["ask"]
    assert connect.args["session"] is session
    assert (await h.report("ask")).outcome == "served"


async def test_a_room_first_tool_handler_gets_the_calls_room(make: MakeConference) -> None:
    """RoomKit 0.109's ``(room_id, name, arguments)`` form is read from the signature."""

    async def lookup(room_id: str, name: str, arguments: dict[str, Any]) -> str:
        return f"{name} in {room_id} for {arguments['key']}"

    h = await make(tool_handler=lookup)
    await h.speak()
    await h.call("call-1", "lookup", {"key": "k"})

    assert await h.provider.wait_for_tool_result("call-1") == "lookup in r1 for k"
    assert h.config.tool_handler is lookup


async def test_the_ten_second_bound_does_not_cut_a_human_call(make: MakeConference) -> None:
    """The host call fails at the default 10 s bound; the person can still answer after."""
    h = await make(tool_handler=never_answers)
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    await h.call("call-2", "slow", {})

    assert await h.provider.wait_for_tool_result("call-2") == body(
        "tool 'slow' did not answer within 10 s"
    )
    await advance(60)
    assert event.pending_id in h.pending
    assert h.resolve(event)
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert (await h.report("Ask")).outcome == "served"
    assert (await h.report("slow")).error_detail == (
        "ToolTimeoutError: tool 'slow' did not answer within 10 s"
    )


async def test_a_per_tool_bound_applies_to_a_human_call(make: MakeConference) -> None:
    h = await make(tool_timeouts={"Ask": 5})
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    assert await h.provider.wait_for_tool_result("call-1") == body(
        "Human input timed out after 5.0s for tool 'Ask'"
    )
    assert not h.resolve(event)
    assert (await h.report("Ask")).outcome == "failed"


async def test_the_handler_timeout_fails_a_human_call(make: MakeConference) -> None:
    h = await make(human=HumanInputToolHandler({"Ask"}, timeout=30, tool_definitions=[ASK]))
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})

    message = "Human input timed out after 30s for tool 'Ask'"
    assert await h.provider.wait_for_tool_result("call-1") == body(message)
    assert (await h.report("Ask")).outcome == "failed"


async def test_a_rejection_refuses_the_call(make: MakeConference) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    assert h.human is not None
    h.human.handler.reject(event.pending_id, "not now")

    assert await h.provider.wait_for_tool_result("call-1") == body("Human input rejected: not now")
    assert (await h.report("Ask")).outcome == "refused"


async def test_a_human_name_is_served_before_the_tool_handler(make: MakeConference) -> None:
    served: list[str] = []

    async def greedy(name: str, arguments: dict[str, Any]) -> str:
        served.append(name)
        return "the host answered"

    h = await make(tool_handler=greedy)
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert served == []


async def test_replacing_the_tool_handler_keeps_the_human_tools_served(
    make: MakeConference,
) -> None:
    h = await make(tool_handler=never_answers)
    await h.speak()
    h.config.tool_handler = lookup_handler
    await h.call("call-1", "lookup", {"key": "k"})
    await h.call("call-2", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_tool_result("call-1") == '{"value": 42, "key": "k"}'
    assert await h.provider.wait_for_tool_result("call-2") == ANSWER


async def test_a_call_without_a_tool_handler_fails(make: MakeConference) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "lookup", {"key": "k"})

    assert await h.provider.wait_for_tool_result("call-1") == body(
        "Tool 'lookup' has no handler on this channel."
    )


async def test_a_human_input_tool_handler_as_tool_handler_is_a_plain_host_handler(
    make: MakeConference, caplog: pytest.LogCaptureFixture
) -> None:
    """Served as any host tool: the call bound cuts it, no notification fires, no warning."""
    ask_host = AITool(name="AskHost", parameters={"type": "object"})
    plain = HumanInputToolHandler({"AskHost"}, timeout=300)
    with caplog.at_level(logging.WARNING, logger="roomkit.tools.human_input"):
        h = await make(tools=[ask_host], tool_handler=plain)
    await h.speak()
    await h.call("call-1", "AskHost", {})

    assert await h.provider.wait_for_tool_result("call-1") == body(
        "tool 'AskHost' did not answer within 10 s"
    )
    assert h.questions.empty()
    assert plain.handler.pending == {}
    assert not any("human_input_handler=" in r.getMessage() for r in caplog.records)


async def test_an_undeclared_tool_is_refused_before_anyone_is_asked(
    make: MakeConference,
) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "Other", {})
    await h.call("call-2", "Ask", {"question": 7})

    assert await h.provider.wait_for_tool_result("call-1") == body("Tool 'Other' is not declared.")
    result = await h.provider.wait_for_tool_result("call-2")
    assert result.startswith('{"error": "Invalid arguments for \'Ask\'')
    assert h.questions.empty()
    assert (await h.report("Ask")).outcome == "refused"


async def test_the_model_cancelling_a_call_withdraws_its_request(make: MakeConference) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    session = h.conference.realtime_session("r1")
    assert session is not None

    await h.provider.simulate_tool_call_cancellation(session, ["call-1"])

    assert not h.resolve(event)
    assert h.provider.tool_results == []
    report = await h.report("Ask")
    assert report.result == body(
        "Tool call cancelled", tool="Ask", hint="The model cancelled the call before its result."
    )


async def test_a_repeated_call_id_is_served_once(make: MakeConference) -> None:
    h = await make()
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    await h.call("call-1", "Ask", {"question": "Color?"})
    h.resolve(await h.questions.get())

    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert h.questions.empty()
    assert len(h.provider.tool_results) == 1


async def test_host_and_human_calls_run_side_by_side(make: MakeConference) -> None:
    h = await make(tool_handler=lookup_handler, tools=[LOOKUP, SLOW])
    await h.speak()
    await h.call("call-1", "Ask", {"question": "Color?"})
    await h.call("call-2", "lookup", {"key": "k"})

    assert await h.provider.wait_for_tool_result("call-2") == '{"value": 42, "key": "k"}'
    event = await h.questions.get()
    h.resolve(event)
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER


async def test_a_participant_who_left_while_the_session_started_is_not_asked() -> None:
    kit = RoomKit()
    questions: asyncio.Queue[PendingInputEvent] = asyncio.Queue()

    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def record(event: PendingInputEvent, ctx: Any) -> None:
        questions.put_nowait(event)

    provider = SlowToConnect()
    conference, backend = await alice_in_conference(kit, provider)
    speaking = asyncio.create_task(backend.simulate_audio("r1", "alice", b"\x00\x01"))
    await provider.connecting.wait()
    await backend.simulate_participant_left("r1", "alice")
    provider.go_on.set()
    assert await speaking

    session = conference.realtime_session("r1")
    assert session is not None
    await provider.simulate_tool_call(session, "call-1", "Ask", {"question": "Color?"})
    assert (await questions.get()).actor_id is None
    await kit.close()


class FailsWhenDisconnected(SlowToConnect):
    """A model whose opening fails once the session is disconnected meanwhile."""

    async def connect(self, session: RealtimeSession, **options: Any) -> None:
        self.connecting.set()
        await self.go_on.wait()
        raise ConnectionError("closed before the session opened")

    async def disconnect(self, session: RealtimeSession) -> None:
        await super().disconnect(session)
        self.go_on.set()


@pytest.mark.parametrize("model", [SlowToConnect, FailsWhenDisconnected])
async def test_a_session_unplugged_while_its_model_connects_is_returned_ended(
    model: type[SlowToConnect],
) -> None:
    kit = RoomKit()
    provider = model()
    conference, _ = await alice_in_conference(kit, provider)
    starting = asyncio.create_task(conference.start_realtime("r1"))
    await provider.connecting.wait()

    await conference.unplug_realtime()
    provider.go_on.set()

    session = await starting
    assert session.state is RealtimeSessionState.ENDED
    assert provider.sessions == {}
    assert conference.sessions == []
    await kit.close()

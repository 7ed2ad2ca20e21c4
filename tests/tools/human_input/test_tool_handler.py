"""HumanInputToolHandler: the tools that ask a person, and what the model reads back."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from pydantic import BaseModel

from roomkit.core.exceptions import (
    HandlerClosedError,
    HumanInputRejectedError,
    InvalidAnswerError,
    RequestWithdrawnError,
    ToolFailedError,
    ToolRefusedError,
    UnservedToolCallError,
)
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInputEvent
from roomkit.providers.ai.base import AITool
from roomkit.testing import advance
from roomkit.tools import ToolCallContext, tool_turn_context
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.human_input.tool_handler import HumanInputCall


class Person:
    """Answers (or refuses) every request announced to it, and keeps the events."""

    def __init__(self, handler: HumanInputHandler, *, answer: str | None = None) -> None:
        self.handler = handler
        self.answer = answer
        self.reason: str | None = None
        self.verdict: bool = True
        self.events: list[PendingInputEvent] = []
        self.asked = asyncio.Event()
        handler.on_input_required = self

    async def __call__(self, event: PendingInputEvent) -> bool:
        self.events.append(event)
        self.asked.set()
        if self.answer is not None:
            self.handler.resolve(event.pending_id, self.answer)
        elif self.reason is not None:
            self.handler.reject(event.pending_id, self.reason)
        return self.verdict


def test_empty_tool_names_raise() -> None:
    with pytest.raises(ValueError, match=r"^tool_names must not be empty$"):
        HumanInputToolHandler(set())


def test_a_definition_outside_tool_names_raises_with_the_names() -> None:
    with pytest.raises(ValueError, match="not in tool_names") as caught:
        HumanInputToolHandler({"Ask"}, 300, None, [AITool(name="Confirm")])

    assert str(caught.value) == "Tool definition 'Confirm' not in tool_names {'Ask'}"


def test_a_long_definition_name_is_quoted_cut_short() -> None:
    """Given twice, or outside tool_names, a 5,000-character name made a message as long."""
    long = AITool(name="t" * 5000)
    for names in ({long.name}, {"Ask", "x" * 5000}):
        with pytest.raises(ValueError, match=r"^Tool definition 'tttt.*\.\.\. ") as caught:
            HumanInputToolHandler(names, 300, None, [long, long])
        assert len(str(caught.value)) < 300


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"tool_names": "Ask"}, TypeError),
        ({"tool_names": {""}}, ValueError),
        ({"tool_names": {"Ask"}, "timeout": 0}, ValueError),
        ({"tool_names": {"Ask"}, "timeout": -5}, ValueError),
        ({"tool_names": {"Ask"}, "timeout": float("inf")}, ValueError),
        ({"tool_names": {"Ask"}, "timeout": "300"}, TypeError),
        ({"tool_names": {"Ask"}, "handler": object()}, TypeError),
        ({"tool_names": {"Ask"}, "tool_definitions": [{"name": "Ask"}]}, TypeError),
        (
            {"tool_names": {"Ask"}, "tool_definitions": [AITool(name="Ask")] * 2},
            ValueError,
        ),
    ],
)
def test_a_misconfigured_handler_raises_at_once(
    kwargs: dict[str, object], error: type[Exception]
) -> None:
    with pytest.raises(error):
        HumanInputToolHandler(**kwargs)  # type: ignore[arg-type]


def test_the_constructor_keeps_its_arguments() -> None:
    names = {"AskUserQuestion", "ConfirmAction"}
    shared = HumanInputHandler()
    definition = AITool(name="AskUserQuestion", description="Ask the user.")

    human = HumanInputToolHandler(names, 12.5, shared, [definition])
    names.add("Sneaky")

    assert human.tool_names == {"AskUserQuestion", "ConfirmAction"}
    assert human.timeout == 12.5
    assert human.handler is shared
    assert human.tools == [definition]


def test_defaults_give_a_new_handler_and_no_definitions() -> None:
    human = HumanInputToolHandler({"Ask"})

    assert isinstance(human.handler, HumanInputHandler)
    assert human.handler is not HumanInputToolHandler({"Ask"}).handler
    assert human.timeout == 300
    assert human.tools == []


def test_tools_is_a_copy() -> None:
    human = HumanInputToolHandler({"Ask"}, tool_definitions=[AITool(name="Ask")])

    human.tools.clear()

    assert [tool.name for tool in human.tools] == ["Ask"]


async def test_ask_returns_the_answer() -> None:
    human = HumanInputToolHandler({"Ask"})
    Person(human.handler, answer='{"answer": "blue"}')

    assert await human.ask("Ask", {"question": "Color?"}) == '{"answer": "blue"}'
    assert human.handler.pending == {}


async def test_ask_reads_the_call_from_the_tool_context() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler, answer="ok")

    with tool_turn_context(
        room_id="r9", actor_id="carol", call=ToolCallContext("r9", "tc9", "ch9")
    ):
        await human.ask("Ask", {"q": 1})

    [event] = person.events
    assert (event.room_id, event.tool_call_id, event.channel_id) == ("r9", "tc9", "ch9")
    assert event.actor_id == "carol"
    assert event.arguments == {"q": 1}


async def test_ask_puts_the_actor_on_the_request() -> None:
    human = HumanInputToolHandler({"Ask"})
    seen = []

    async def look(event: PendingInputEvent) -> bool:
        seen.append(human.handler.pending[event.pending_id].actor_id)
        human.handler.resolve(event.pending_id, "ok")
        return True

    human.handler.on_input_required = look
    with tool_turn_context(room_id="r1", actor_id="alice"):
        await human("Ask", {})

    assert seen == ["alice"]


async def test_ask_outside_a_tool_loop_has_no_room_call_or_actor() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler, answer="ok")

    await human.ask("Ask", {})

    [event] = person.events
    assert (event.room_id, event.tool_call_id, event.channel_id) == ("", "", "")
    assert event.actor_id is None


async def test_ask_takes_the_room_from_the_turn_when_the_call_has_none() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler, answer="ok")

    with tool_turn_context(room_id="r2", actor_id="bob"):
        await human.ask("Ask", {})

    assert (person.events[0].room_id, person.events[0].actor_id) == ("r2", "bob")


async def test_ask_takes_the_call_it_is_given_over_the_tool_context() -> None:
    """A channel passes its call explicitly: its room, channel, door, id and actor win."""
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler, answer="ok")
    call = HumanInputCall("r3", "voice", ChannelType.REALTIME_VOICE, "tc3", "dave")

    with tool_turn_context(
        room_id="r9", actor_id="carol", call=ToolCallContext("r9", "tc9", "ch9")
    ):
        await human.ask("Ask", {}, call=call)

    [event] = person.events
    assert (event.room_id, event.channel_id, event.tool_call_id) == ("r3", "voice", "tc3")
    assert (event.channel_type, event.actor_id) == (ChannelType.REALTIME_VOICE, "dave")


@pytest.mark.parametrize(
    "channel_type", [ChannelType.AI, ChannelType.REALTIME_VOICE, ChannelType.CONFERENCE]
)
async def test_ask_passes_the_door_to_the_event(channel_type: ChannelType) -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler, answer="ok")

    await human.ask("Ask", {}, channel_type=channel_type)

    assert person.events[0].channel_type is channel_type


async def test_calling_the_handler_asks_on_an_ai_door() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler, answer="via call")

    assert await human("Ask", {"q": 1}) == "via call"
    assert person.events[0].channel_type is ChannelType.AI


async def test_an_unserved_name_is_declined_without_asking() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler, answer="never")

    with pytest.raises(UnservedToolCallError) as caught:
        await human("Other", {})

    assert str(caught.value) == "tool 'Other' is not served here"
    assert human.handler.pending == {}
    assert person.events == []


@pytest.mark.parametrize(("timeout", "shown"), [(300, "300"), (300.0, "300.0"), (0.2, "0.2")])
async def test_a_timeout_fails_the_call_with_the_json_the_model_reads(
    timeout: float, shown: str
) -> None:
    human = HumanInputToolHandler({"AskUserQuestion"}, timeout=timeout)
    loop = asyncio.get_running_loop()
    start = loop.time()

    with pytest.raises(ToolFailedError) as caught:
        await human.ask("AskUserQuestion", {})

    expected = f"Human input timed out after {shown}s for tool 'AskUserQuestion'"
    assert caught.value.message == json.dumps({"error": expected})
    assert str(caught.value) == caught.value.message
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__ is True
    assert loop.time() - start == pytest.approx(timeout)
    assert human.handler.pending == {}


async def test_the_spec_timeout_text_is_exact() -> None:
    human = HumanInputToolHandler({"AskUserQuestion"}, timeout=300)

    with pytest.raises(ToolFailedError) as caught:
        await human("AskUserQuestion", {})

    assert caught.value.message == (
        '{"error": "Human input timed out after 300s for tool \'AskUserQuestion\'"}'
    )


async def test_a_rejection_refuses_the_call_with_the_reason() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler)
    person.reason = "user declined"

    with pytest.raises(ToolRefusedError) as caught:
        await human.ask("Ask", {})

    assert caught.value.message == '{"error": "Human input rejected: user declined"}'
    assert caught.value.__cause__ is None


async def test_an_empty_rejection_reads_request_rejected() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler)
    person.reason = ""

    with pytest.raises(ToolRefusedError) as caught:
        await human.ask("Ask", {})

    assert json.loads(caught.value.message) == {"error": "Human input rejected: Request rejected"}


async def test_a_hook_denial_shows_the_fixed_text_to_the_model() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler)
    person.verdict = False

    with pytest.raises(ToolRefusedError) as caught:
        await human.ask("Ask", {})

    assert caught.value.message == (
        '{"error": "Human input rejected: Denied by ON_USER_INPUT_REQUIRED hook"}'
    )


async def test_a_withdrawn_request_propagates_as_a_plain_runtime_error() -> None:
    human = HumanInputToolHandler({"Ask"})
    asked = asyncio.Event()

    async def close_instead(event: PendingInputEvent) -> bool:
        asked.set()
        return True

    human.handler.on_input_required = close_instead
    call = asyncio.create_task(human.ask("Ask", {}))
    await asked.wait()

    await human.handler.close(channel_id="")

    with pytest.raises(RequestWithdrawnError) as caught:
        await call
    assert str(caught.value) == "Human input handler closed"
    assert isinstance(caught.value, RuntimeError)
    assert not isinstance(caught.value, HumanInputRejectedError | ToolRefusedError)


async def test_asking_a_closed_handler_raises_the_closed_error() -> None:
    human = HumanInputToolHandler({"Ask"})
    await human.handler.close()

    with pytest.raises(HandlerClosedError) as caught:
        await human.ask("Ask", {})

    assert str(caught.value) == "Human input handler is closed"
    assert isinstance(caught.value, RuntimeError)


async def test_a_cancelled_ask_withdraws_its_request() -> None:
    human = HumanInputToolHandler({"Ask"})
    person = Person(human.handler)
    call = asyncio.create_task(human.ask("Ask", {}))
    await person.asked.wait()
    [event] = person.events

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    assert human.handler.resolve(event.pending_id, "late") is False
    assert human.handler.pending == {}


async def test_two_tool_handlers_can_share_one_handler() -> None:
    shared = HumanInputHandler()
    ask = HumanInputToolHandler({"Ask"}, handler=shared)
    confirm = HumanInputToolHandler({"Confirm"}, handler=shared)
    person = Person(shared, answer="yes")

    assert await asyncio.gather(ask("Ask", {}), confirm("Confirm", {})) == ["yes", "yes"]
    assert [event.tool_name for event in person.events] == ["Ask", "Confirm"]


async def test_a_human_tool_blocks_while_parallel_tools_finish() -> None:
    human = HumanInputToolHandler({"Ask"})
    finished: list[str] = []

    async def search(query: str) -> str:
        await advance(1)
        finished.append("search")
        return f"found {query}"

    async def ask() -> str:
        answer = await human("Ask", {})
        finished.append("Ask")
        return answer

    async def person() -> None:
        await advance(60)
        [pending_id] = human.handler.pending
        human.handler.resolve(pending_id, "blue")

    results = await asyncio.gather(ask(), search("docs"), person())

    assert results[:2] == ["blue", "found docs"]
    assert finished == ["search", "Ask"]


@pytest.mark.parametrize(
    ("schemas", "error", "words"),
    [
        ({"Other": {"type": "string"}}, ValueError, "not in tool_names"),
        ({"Ask": ["not", "a", "schema"]}, TypeError, "answer_schemas['Ask']"),
        ({"Ask": {"type": 12}}, ValueError, "answer_schemas['Ask']"),
    ],
)
def test_a_bad_answer_schema_is_refused_naming_its_tool(
    schemas: dict[str, object], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=re.escape(words)):
        HumanInputToolHandler({"Ask"}, answer_schemas=schemas)  # type: ignore[arg-type]


async def test_the_answer_schema_travels_with_each_request() -> None:
    schema = {"type": "object", "required": ["confirmed"]}
    human = HumanInputToolHandler({"Confirm"}, answer_schemas={"Confirm": schema})
    asked: list[str] = []

    async def answer(event: PendingInputEvent) -> None:
        asked.append(event.pending_id)
        request = await human.handler.get_request(event.pending_id)
        assert request is not None
        assert request.answer_schema == schema
        with pytest.raises(InvalidAnswerError, match="confirmed"):
            await human.handler.aresolve(event.pending_id, "{}")
        assert await human.handler.aresolve(event.pending_id, '{"confirmed": true}')

    human.handler.on_input_required = answer
    assert await human("Confirm", {"action": "deploy"}) == '{"confirmed": true}'
    assert len(asked) == 1


class Confirmation(BaseModel):
    confirmed: bool


async def test_a_model_stands_for_its_answer_schema() -> None:
    human = HumanInputToolHandler({"Confirm"}, answer_schemas={"Confirm": Confirmation})
    assert human.answer_schemas["Confirm"] == Confirmation.model_json_schema()

    async def answer(event: PendingInputEvent) -> None:
        request = await human.handler.get_request(event.pending_id)
        assert request is not None
        assert request.answer_schema == Confirmation.model_json_schema()
        with pytest.raises(InvalidAnswerError, match="confirmed"):
            await human.handler.aresolve(event.pending_id, '{"confirmed": "yes"}')
        assert await human.handler.aresolve(event.pending_id, Confirmation(confirmed=True))

    human.handler.on_input_required = answer
    assert await human("Confirm", {"action": "deploy"}) == '{"confirmed":true}'


@pytest.mark.parametrize(
    ("arguments", "error", "says"),
    [
        ((None,), TypeError, "tool_names must be a set of names"),
        ((5,), TypeError, "tool_names must be a set of names"),
        (({"ask"}, 10**12), ValueError, "a century"),
    ],
)
def test_a_tool_handler_made_wrong_says_what_to_give(
    arguments: tuple[object, ...], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        HumanInputToolHandler(*arguments)  # type: ignore[arg-type]


async def test_a_call_that_is_no_human_input_call_is_refused_naming_it() -> None:
    served = HumanInputToolHandler({"ask"}, handler=HumanInputHandler())
    with pytest.raises(TypeError, match="call must be a HumanInputCall"):
        await served.ask("ask", {"question": "?"}, call="x")  # type: ignore[arg-type]

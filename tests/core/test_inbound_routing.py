"""A message from the person a question waits on answers it; other messages wait their turn.

The kit routes a message to the sender's one open question in the room that takes its text;
several such questions refuse the message until it names one; anything else starts a turn,
which runs once the channel's running turn in the room is done (unless the channel allows
concurrent turns).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from roomkit import HumanInputToolHandler, InboundMessage, InboundResult, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.exceptions import (
    AmbiguousAnswerError,
    InvalidAnswerError,
    RequestSettledError,
    UnknownRequestError,
)
from roomkit.core.store import RoomStore
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse, AITool, AIToolCall
from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

ASK = AITool(
    name="Ask",
    description="Ask the user.",
    parameters={
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "options": {"type": "array", "items": {"type": "string"}},
            "multiSelect": {"type": "boolean"},
        },
    },
)

TWO_QUESTIONS = "Ask me two things"


class Planner(AIProvider):
    """Asks what a message's text says to ask, then replies with the answers it got.

    ``"Plan"`` asks a free-text question, ``"Choose"`` a single choice, ``"Pick"`` a
    multiple choice, :data:`TWO_QUESTIONS` two free-text questions in one round; any other
    text is answered ``"Noted: <text>"`` at once. Every context is recorded.
    """

    def __init__(self) -> None:
        self.contexts: list[AIContext] = []

    @property
    def model_name(self) -> str:
        return "planner"

    async def generate(self, context: AIContext) -> AIResponse:
        self.contexts.append(context)
        last = context.messages[-1]
        if last.tool_result_parts:
            answers = ", ".join(part.content for part in last.tool_result_parts)
            return AIResponse(content=f"Booked: {answers}")
        text = str(last.content)
        turn = len(self.contexts)
        asks: dict[str, list[dict[str, Any]]] = {
            "Plan": [{"question": "Where to?"}],
            "Choose": [{"question": "Which kind?", "options": ["City", "Beach"]}],
            "Pick": [{"question": "Extras?", "options": ["Car", "Hotel"], "multiSelect": True}],
            TWO_QUESTIONS: [{"question": "Where to?"}, {"question": "When?"}],
        }
        calls = asks.get(text)
        if calls is None:
            return AIResponse(content=f"Noted: {text}")
        return AIResponse(
            tool_calls=[
                AIToolCall(id=f"call-{turn}-{i}", name="Ask", arguments=arguments)
                for i, arguments in enumerate(calls)
            ]
        )


@dataclass
class Agent:
    """A kit with the AI channel ``ai`` in room ``trip``, and the questions it asked."""

    kit: RoomKit
    handler: HumanInputHandler
    planner: Planner
    asked: asyncio.Queue[str] = field(default_factory=asyncio.Queue)

    async def say(self, text: str, sender: str = "ann", **options: Any) -> InboundResult:
        message = InboundMessage("web", sender, TextContent(text))
        return await self.kit.process_inbound(message, room_id="trip", **options)

    def start(self, text: str, sender: str = "ann") -> asyncio.Task[InboundResult]:
        """Say ``text`` in a task of its own (its turn may wait on a person)."""
        return asyncio.get_running_loop().create_task(self.say(text, sender))

    async def queue(self, text: str, sender: str = "ann") -> asyncio.Task[InboundResult]:
        """Say ``text`` in a task; returns once the message is stored."""
        stored = asyncio.Event()

        async def run() -> InboundResult:
            message = InboundMessage("web", sender, TextContent(text))
            return await self.kit.process_inbound(
                message, room_id="trip", on_recorded=lambda _: stored.set()
            )

        task = asyncio.get_running_loop().create_task(run())
        async with asyncio.timeout(10):
            await stored.wait()
        return task

    async def question(self) -> PendingInput:
        """The next question asked (waits for it)."""
        async with asyncio.timeout(10):
            pending_id = await self.asked.get()
        request = await self.handler.get_request(pending_id)
        assert request is not None
        return request

    async def history(self) -> list[str]:
        return [event.content.body for event in await self.kit.store.list_events("trip")]


async def make_agent(
    store: RoomStore | None = None,
    handler: HumanInputHandler | None = None,
    **channel_options: Any,
) -> Agent:
    handler = handler if handler is not None else HumanInputHandler()
    kit = RoomKit(store=store)
    planner = Planner()
    human = HumanInputToolHandler({"Ask"}, handler=handler, tool_definitions=[ASK], timeout=300)
    kit.register_channel(
        AIChannel("ai", provider=planner, human_input_handler=human, **channel_options)
    )
    agent = Agent(kit, handler, planner)

    @kit.on("user_input_required")
    async def asked(event: Any) -> None:
        await agent.asked.put(event.data["pending_id"])

    if await kit.store.get_room("trip") is None:
        await kit.create_room("trip")
        await kit.attach_channel("trip", "ai")
    return agent


@pytest.fixture
async def agent() -> AsyncIterator[Agent]:
    made = await make_agent()
    yield made
    await made.kit.close()


async def test_a_message_from_the_person_asked_answers_the_free_text_question(
    agent: Agent,
) -> None:
    turn = agent.start("Plan")
    question = await agent.question()

    answered = await agent.say("Lisbon")

    assert answered.answered == question.pending_id
    assert answered.responses == ()
    assert answered.event.metadata["answers"] == question.pending_id
    result = await turn
    assert [reply.content.body for reply in result.responses] == ["Booked: Lisbon"]
    settled = await agent.handler.get_request(question.pending_id)
    assert settled is not None
    assert (settled.status, settled.settled_by) == (PendingInputStatus.RESOLVED, "ann")
    assert await agent.history() == ["Plan", "Lisbon", "Booked: Lisbon"]
    assert len(agent.planner.contexts) == 2  # no turn ran on the answer


async def test_someone_else_s_message_does_not_answer_it(agent: Agent) -> None:
    turn = agent.start("Plan")
    question = await agent.question()
    bob = await agent.queue("Lisbon", sender="bob")

    pending = await agent.handler.get_request(question.pending_id)
    assert pending is not None
    assert pending.status is PendingInputStatus.PENDING
    assert await agent.handler.aresolve(question.pending_id, "Oslo", by="ann")
    assert [r.content.body for r in (await turn).responses] == ["Booked: Oslo"]
    assert [r.content.body for r in (await bob).responses] == ["Noted: Lisbon"]


async def test_a_door_whose_answers_come_another_way_routes_no_text_as_one(
    agent: Agent,
) -> None:
    """``text_answers=False``: the asked person's message starts a turn of its own, which
    waits for the turn holding the question."""
    turn = agent.start("Plan")
    question = await agent.question()
    stored = asyncio.Event()
    message = InboundMessage("web", "ann", TextContent("Lisbon"))
    later = asyncio.get_running_loop().create_task(
        agent.kit.process_inbound(
            message, room_id="trip", on_recorded=lambda _: stored.set(), text_answers=False
        )
    )
    async with asyncio.timeout(10):
        await stored.wait()

    pending = await agent.handler.get_request(question.pending_id)
    assert pending is not None
    assert pending.status is PendingInputStatus.PENDING
    assert await agent.handler.aresolve(question.pending_id, "Oslo", by="ann")
    assert [r.content.body for r in (await turn).responses] == ["Booked: Oslo"]
    result = await later
    assert result.answered is None
    assert [r.content.body for r in result.responses] == ["Noted: Lisbon"]


async def test_a_single_choice_takes_exactly_one_of_its_labels(agent: Agent) -> None:
    turn = agent.start("Choose")
    question = await agent.question()

    other = await agent.queue("City please")
    assert agent.kit.queued_turns("trip", "ai") == 2
    label = await agent.say(" Beach ")

    assert label.answered == question.pending_id
    assert [r.content.body for r in (await turn).responses] == ["Booked: Beach"]
    assert [r.content.body for r in (await other).responses] == ["Noted: City please"]


async def test_a_multiple_choice_is_not_answered_by_text(agent: Agent) -> None:
    turn = agent.start("Pick")
    question = await agent.question()

    other = await agent.queue("Car")

    pending = await agent.handler.get_request(question.pending_id)
    assert pending is not None
    assert pending.status is PendingInputStatus.PENDING
    assert await agent.handler.aresolve(question.pending_id, '{"answer":["Car"]}')
    await turn
    assert (await other).answered is None
    assert [r.content.body for r in (await other).responses] == ["Noted: Car"]


async def test_a_request_with_an_answer_schema_is_not_answered_by_text(agent: Agent) -> None:
    request = await agent.handler.create_detached(
        "Form", {"fields": ["name"]}, room_id="trip", actor_id="ann",
        answer_schema={"type": "object"},
    )  # fmt: skip

    result = await agent.say("Ann")

    assert result.answered is None
    pending = await agent.handler.get_request(request.pending_id)
    assert pending is not None
    assert pending.status is PendingInputStatus.PENDING
    assert await agent.handler.arelease(request.pending_id)


async def test_a_custom_request_without_a_schema_takes_text(agent: Agent) -> None:
    request = await agent.handler.create_detached(
        "Note", {"topic": "diet"}, room_id="trip", actor_id="ann"
    )

    result = await agent.say("  vegetarian ")

    assert result.answered == request.pending_id
    settled = await agent.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.result == "vegetarian"


async def test_two_open_questions_refuse_the_message_until_it_names_one(agent: Agent) -> None:
    turn = agent.start(TWO_QUESTIONS)
    first, second = await agent.question(), await agent.question()

    with pytest.raises(AmbiguousAnswerError) as refused:
        await agent.say("Lisbon")
    candidates = {request.pending_id for request in refused.value.candidates}
    assert candidates == {first.pending_id, second.pending_id}
    assert await agent.history() == [TWO_QUESTIONS]

    when = await agent.say("In May", answers=second.pending_id)
    assert when.answered == second.pending_id
    where = await agent.say("Lisbon")  # one question left: no need to name it
    assert where.answered == first.pending_id
    assert [r.content.body for r in (await turn).responses] == ["Booked: Lisbon, In May"]
    assert await agent.history() == [TWO_QUESTIONS, "In May", "Lisbon", "Booked: Lisbon, In May"]


async def test_a_named_answer_to_a_question_that_cannot_take_it_is_refused(
    agent: Agent,
) -> None:
    turn = agent.start("Choose")
    question = await agent.question()

    with pytest.raises(InvalidAnswerError, match="answer it on its card"):
        await agent.say("Mountains", answers=question.pending_id)
    with pytest.raises(UnknownRequestError):
        await agent.say("Beach", sender="bob", answers=question.pending_id)
    with pytest.raises(UnknownRequestError):
        await agent.say("Beach", answers="no-such-question")
    assert await agent.handler.aresolve(question.pending_id, "City", by="ann")
    await turn
    with pytest.raises(RequestSettledError) as settled:
        await agent.say("Beach", answers=question.pending_id)
    assert settled.value.request is not None
    assert settled.value.request.result == "City"
    assert await agent.history() == ["Choose", "Booked: City"]


async def test_a_named_answer_in_a_kit_that_asks_nothing_is_refused() -> None:
    """A kit without a human-input handler holds no question: a message naming one is
    refused, as one naming an unknown question is, and nothing is recorded."""
    kit = RoomKit()
    await kit.create_room("trip")
    message = InboundMessage("web", "ann", TextContent("Lisbon"))
    with pytest.raises(UnknownRequestError, match="answers= takes the id"):
        await kit.process_inbound(message, room_id="trip", answers="no-such-question")
    assert await kit.store.recent_events("trip", 10) == []


async def test_a_message_waits_for_the_running_turn_then_reads_its_reply(agent: Agent) -> None:
    turn = agent.start("Choose")
    question = await agent.question()

    waiting = await agent.queue("Also a dog")
    # The second turn has not started: one model call so far, both turns in the lane.
    assert len(agent.planner.contexts) == 1
    assert agent.kit.queued_turns("trip", "ai") == 2
    assert await agent.handler.aresolve(question.pending_id, "City", by="ann")

    assert [r.content.body for r in (await turn).responses] == ["Booked: City"]
    assert [r.content.body for r in (await waiting).responses] == ["Noted: Also a dog"]
    # The waiting turn read the first turn's reply before its own message.
    bodies = [message.content for message in agent.planner.contexts[-1].messages]
    assert bodies == ["Choose", "Booked: City", "Also a dog"]
    assert await agent.history() == ["Choose", "Also a dog", "Booked: City", "Noted: Also a dog"]
    assert agent.kit.queued_turns("trip", "ai") == 0


async def test_messages_queued_behind_a_turn_run_in_order() -> None:
    agent = await make_agent()
    turn = agent.start("Choose")
    question = await agent.question()
    queued = [await agent.queue(text) for text in ("one", "two", "three")]
    assert agent.kit.queued_turns("trip", "ai") == 4

    assert await agent.handler.aresolve(question.pending_id, "City")
    await turn
    replies = [(await task).responses[0].content.body for task in queued]
    assert replies == ["Noted: one", "Noted: two", "Noted: three"]
    # Each turn reads the replies given before it, its message last, no later message.
    two, three = ([m.content for m in c.messages] for c in agent.planner.contexts[-2:])
    assert two == ["Choose", "one", "Booked: City", "Noted: one", "two"]
    assert three == ["Choose", "one", "two", "Booked: City", "Noted: one", "Noted: two", "three"]
    await agent.kit.close()


async def test_concurrent_turns_let_a_second_turn_run_alongside() -> None:
    agent = await make_agent(concurrent_turns=True)
    turn = agent.start("Choose")
    question = await agent.question()

    other = await agent.say("Also a dog")  # returns while the first turn still waits

    assert [r.content.body for r in other.responses] == ["Noted: Also a dog"]
    pending = await agent.handler.get_request(question.pending_id)
    assert pending is not None
    assert pending.status is PendingInputStatus.PENDING
    assert agent.kit.queued_turns("trip", "ai") == 0
    assert await agent.handler.aresolve(question.pending_id, "City")
    await turn
    await agent.kit.close()


def test_concurrent_turns_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="concurrent_turns must be True or False"):
        AIChannel("ai", provider=Planner(), concurrent_turns=1)  # type: ignore[arg-type]


async def test_an_authorless_message_names_no_question(agent: Agent) -> None:
    with pytest.raises(ValueError, match="answers= needs a sender"):
        await agent.say("Lisbon", sender="", answers="anything")


async def test_a_queued_message_survives_a_restart_on_sqlite(tmp_path: Path) -> None:
    """Closed while a turn waits on a person and a message waits behind it, the kit
    restarted on the same files re-drives both, in order."""
    db = tmp_path / "kit.db"
    rooms, questions = SQLiteRoomStore(db), SQLiteStore(db, backstop_interval=0.02)
    first = await make_agent(rooms, HumanInputHandler(store=questions))
    turn = first.start("Choose")
    question = await first.question()
    waiting = await first.queue("Also a dog")
    await first.kit.close()
    assert (await turn).responses == ()
    assert (await waiting).responses == ()
    await rooms.close()
    await questions.close()

    rooms, questions = SQLiteRoomStore(db), SQLiteStore(db, backstop_interval=0.02)
    second = await make_agent(rooms, HumanInputHandler(store=questions))
    assert len(await rooms.open_turns()) == 2
    resumed = asyncio.get_running_loop().create_task(second.kit.resume_pending())
    assert (await second.say("City")).answered == question.pending_id

    async with asyncio.timeout(10):
        replies = await resumed
    assert [reply.content.body for reply in replies] == ["Booked: City", "Noted: Also a dog"]
    assert await second.history() == [
        "Choose",
        "Also a dog",
        "City",
        "Booked: City",
        "Noted: Also a dog",
    ]
    assert await rooms.open_turns() == []
    # The first turn's tool call was replayed: one model call per turn after the restart.
    assert len(second.planner.contexts) == 2
    await second.kit.close()
    await rooms.close()
    await questions.close()


async def test_an_answer_on_sqlite_comes_before_the_reply_it_brings(tmp_path: Path) -> None:
    db = tmp_path / "kit.db"
    rooms, questions = SQLiteRoomStore(db), SQLiteStore(db, backstop_interval=0.02)
    agent = await make_agent(rooms, HumanInputHandler(store=questions))
    turn = agent.start("Plan")
    question = await agent.question()

    assert (await agent.say("Lisbon")).answered == question.pending_id

    assert [r.content.body for r in (await turn).responses] == ["Booked: Lisbon"]
    assert await agent.history() == ["Plan", "Lisbon", "Booked: Lisbon"]
    assert await rooms.open_turns() == []
    await agent.kit.close()
    await rooms.close()
    await questions.close()

"""The chat routes a message to the question it answers, and asks which when it cannot tell.

The demo (its trip planner, its SQLite files) driven over HTTP: a message typed while the
free-text question is open answers it, so the plan ends with one outcome; a message typed
while a choice is open waits for the plan to end, then starts the next. A desk whose agent
asks two free-text questions at once answers a message with 409 and the two candidates.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from desk_harness import World, bearer

from roomkit.channels.ai import AIChannel
from roomkit.desk.demo import DEMO_PERSON, DEMO_ROOM, Demo, build_demo
from roomkit.desk.demo_model import TRIP_KINDS
from roomkit.models.pending_input import PendingInput
from roomkit.providers.ai.base import AIResponse, AITool, AIToolCall
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.stores.sqlite import SQLiteRoomStore
from roomkit.tools.human_input import HumanInputToolHandler

MESSAGES = f"/api/rooms/{DEMO_ROOM}/messages"


@dataclass
class Desk:
    """The demo over HTTP, with the questions its agent asks and what the chat publishes."""

    demo: Demo
    client: httpx.AsyncClient
    asked: asyncio.Queue[str]
    published: asyncio.Queue[dict[str, Any]]

    @property
    def me(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.demo.token_for(DEMO_PERSON)}"}

    async def say(self, text: str, **extra: str) -> httpx.Response:
        return await self.client.post(MESSAGES, json={"text": text, **extra}, headers=self.me)

    async def question(self) -> PendingInput:
        async with asyncio.timeout(10):
            pending_id = await self.asked.get()
        request = await self.demo.handler.get_request(pending_id)
        assert request is not None
        return request

    async def answer(self, request: PendingInput, body: dict[str, Any]) -> None:
        url = f"/api/requests/{request.pending_id}/answer"
        response = await self.client.post(url, json=body, headers=self.me)
        assert response.status_code == 200, response.text

    async def reply(self) -> str:
        """The agent's next message on the page."""
        while True:
            async with asyncio.timeout(10):
                message = await self.published.get()
            if message["sender_id"] != DEMO_PERSON:
                return str(message["body"])

    async def history(self) -> list[str]:
        found = await self.client.get(MESSAGES, headers=self.me)
        return [message["body"] for message in found.json()["messages"]]


@pytest.fixture
async def desk(tmp_path: Path) -> AsyncIterator[Desk]:
    demo = await build_demo(tmp_path)
    asked: asyncio.Queue[str] = asyncio.Queue()
    published: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    @demo.kit.on("user_input_required")
    async def on_asked(event: Any) -> None:
        await asked.put(event.data["pending_id"])

    hub = demo.app.state.desk_hub
    original = hub.publish_room_message

    async def spy(room_id: str, message: dict[str, Any]) -> None:
        await published.put(message)
        await original(room_id, message)

    hub.publish_room_message = spy
    transport = httpx.ASGITransport(app=demo.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield Desk(demo, client, asked, published)
    await demo.aclose()


async def finish_the_plan(desk: Desk) -> None:
    """Answer the three questions after the destination, and approve the booking."""
    await desk.answer(await desk.question(), {"answer": ["Flights"]})
    plan = await desk.question()
    answers = [
        {"question": item["question"], "answer": item["options"][i]["label"]}
        for item, i in zip(plan.arguments["questions"], (1, 1, 1), strict=True)
    ]
    await desk.answer(plan, {"answers": answers})
    await desk.answer(await desk.question(), {"decision": "approve"})


async def test_a_message_typed_while_the_free_text_question_is_open_answers_it(
    desk: Desk,
) -> None:
    assert (await desk.say("Plan a trip")).status_code == 202
    await desk.answer(await desk.question(), {"answer": "City break"})
    where = await desk.question()
    assert "where would you like to go?" in where.arguments["question"].lower()

    typed = await desk.say("Lisbon")

    assert typed.status_code == 202
    assert typed.json()["answers"] == where.pending_id
    settled = await desk.demo.handler.get_request(where.pending_id)
    assert settled is not None
    assert (settled.result, settled.settled_by) == ("Lisbon", DEMO_PERSON)
    # Typed in the chat, a WebSocket channel: its settled entry names that surface.
    trail = await desk.demo.handler.history(where.pending_id)
    assert (trail[-1]["type"], trail[-1]["surface"]) == ("settled", "websocket")
    await finish_the_plan(desk)
    booked = await desk.reply()
    assert booked.startswith("Booked: ")
    assert "Lisbon" in booked
    # One plan, one outcome: no second turn ran on "Lisbon".
    assert await desk.history() == ["Plan a trip", "Lisbon", booked]
    assert await desk.demo.handler.list_pending() == []
    rooms = desk.demo.kit.store
    assert isinstance(rooms, SQLiteRoomStore)
    assert await rooms.open_turns() == []


async def test_a_message_typed_while_a_choice_is_open_waits_for_the_plan(desk: Desk) -> None:
    await desk.say("Plan a trip")
    kind = await desk.question()

    typed = await desk.say("Somewhere warm")

    assert typed.status_code == 202
    assert typed.json()["answers"] is None
    assert desk.demo.kit.queued_turns(DEMO_ROOM, "agent") == 2
    await desk.answer(kind, {"answer": "City break"})
    await desk.answer(await desk.question(), {"answer": "Lisbon"})
    await finish_the_plan(desk)
    booked = await desk.reply()
    assert booked.startswith("Booked: ")
    # Then the waiting message gets its own turn: a new plan, asked once.
    again = await desk.question()
    assert again.arguments == {
        "question": "What kind of trip are you planning?",
        "options": TRIP_KINDS,
    }
    assert await desk.history() == ["Plan a trip", "Somewhere warm", booked]
    assert [request.pending_id for request in await desk.demo.handler.list_pending()] == [
        again.pending_id
    ]


async def test_a_named_question_that_takes_no_text_gets_a_422(desk: Desk) -> None:
    await desk.say("Plan a trip")
    kind = await desk.question()

    refused = await desk.say("Mountains", answers=kind.pending_id)
    unknown = await desk.say("Beach holiday", answers="no-such-question")

    assert refused.status_code == 422
    assert "answer it on its card" in refused.json()["detail"]
    assert unknown.status_code == 422
    assert await desk.history() == ["Plan a trip"]
    labelled = await desk.say("Beach holiday", answers=kind.pending_id)
    assert labelled.json()["answers"] == kind.pending_id
    named_again = await desk.say("City break", answers=kind.pending_id)
    assert named_again.status_code == 409
    assert named_again.json() == {"detail": f"Already answered by {DEMO_PERSON}"}


ASK = AITool(
    name="AskUserQuestion",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)


@pytest.fixture
async def two_questions() -> AsyncIterator[tuple[World, asyncio.Queue[str]]]:
    world = World(chat_channel_id="chat")
    asked: asyncio.Queue[str] = asyncio.Queue()

    @world.kit.on("user_input_required")
    async def on_asked(event: Any) -> None:
        await asked.put(event.data["pending_id"])

    both = AIResponse(
        tool_calls=[
            AIToolCall(id="q-1", name="AskUserQuestion", arguments={"question": "Where to?"}),
            AIToolCall(id="q-2", name="AskUserQuestion", arguments={"question": "When?"}),
        ]
    )
    provider = MockAIProvider(ai_responses=[both, AIResponse(content="Got both.")])
    human = HumanInputToolHandler(
        {"AskUserQuestion"}, handler=world.handler, tool_definitions=[ASK]
    )
    world.kit.register_channel(AIChannel("agent", provider=provider, human_input_handler=human))
    await world.room("room", "alice")
    await world.kit.attach_channel("room", "agent")
    yield world, asked
    await world.kit.close()


async def test_two_open_questions_get_a_409_with_both_candidates(
    two_questions: tuple[World, asyncio.Queue[str]],
) -> None:
    world, asked = two_questions
    url, alice = "/api/rooms/room/messages", bearer("alice")
    async with world.client() as client:
        await client.post(url, json={"text": "Plan"}, headers=alice)
        async with asyncio.timeout(10):
            for _ in range(2):  # both questions open in the same round
                await asked.get()
        ambiguous = await client.post(url, json={"text": "Lisbon"}, headers=alice)
        body = ambiguous.json()
        assert ambiguous.status_code == 409
        assert [c["arguments"]["question"] for c in body["candidates"]] == ["Where to?", "When?"]
        assert body["detail"] == (
            "Your message could answer several questions: choose the one it answers"
        )
        history = await client.get(url, headers=alice)
        assert [m["body"] for m in history.json()["messages"]] == ["Plan"]

        where = body["candidates"][0]["id"]
        chosen = await client.post(url, json={"text": "Lisbon", "answers": where}, headers=alice)
        assert (chosen.status_code, chosen.json()["answers"]) == (202, where)
        last = await client.post(url, json={"text": "In May"}, headers=alice)
        assert last.json()["answers"] == body["candidates"][1]["id"]

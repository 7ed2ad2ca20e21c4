"""Cancelling an A2A task stops that task's own turn: one queued behind another turn of the
room never runs, a running one is cut; the turns of the context's other tasks go on."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import CancelTaskRequest, TaskState
from a2a_world import World, ask

from roomkit.core.store import InMemoryStore
from roomkit.models.room import RoomEvent, TextContent
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse
from roomkit.stores.sqlite import SQLiteRoomStore


class Gated(AIProvider):
    """A model that answers each message from a script of its own, each round only once
    the test lets that message's rounds go."""

    def __init__(self, scripts: dict[str, list[AIResponse]]) -> None:
        self.scripts = scripts
        self.calls: list[str] = []
        """The message each round was asked about, in order."""
        self.asked: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.go: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    @property
    def model_name(self) -> str:
        return "gated"

    async def generate(self, context: AIContext) -> AIResponse:
        text = [message.text for message in context.messages if message.role == "user"][-1]
        self.calls.append(text)
        self.asked[text].set()
        await self.go[text].wait()
        return self.scripts[text].pop(0)


class Recorded(InMemoryStore):
    """The kit's room store, telling when a message with a given text is in a room."""

    def __init__(self) -> None:
        super().__init__()
        self.stored: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def add_event(self, event: RoomEvent) -> None:
        await super().add_event(event)
        if isinstance(event.content, TextContent):
            self.stored[event.content.body].set()


async def test_cancelling_a_queued_task_never_runs_its_turn() -> None:
    """The second task's turn waits behind the first's: cancelled there, the model is never
    asked about it, and the first task completes."""
    model = Gated(
        {
            "Paint the logo": [AIResponse(content="Painted.")],
            "Write a slogan": [AIResponse(content="Slogan set.")],
        }
    )
    model.go["Write a slogan"].set()
    rooms = Recorded()
    world = World([], provider=model, rooms=rooms)
    async with world.http() as http:
        first = asyncio.create_task(world.send(http, text="Paint the logo"))
        await model.asked["Paint the logo"].wait()
        second = await world.send(http, text="Write a slogan", immediately=True)
        await rooms.stored["Write a slogan"].wait()
        assert world.kit.queued_turns("ctx-1", "agent") == 2
        canceled = await world.client(http).cancel_task(CancelTaskRequest(id=second.id))
        model.go["Paint the logo"].set()
        done = await first
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(done.status.message.parts)) == ["Painted."]
    assert model.calls == ["Paint the logo"]
    assert world.kit.queued_turns("ctx-1", "agent") == 0


async def test_cancelling_a_running_task_cuts_its_turn_and_the_next_one_runs() -> None:
    """The first task's turn is cut while the model is still answering: the question that
    answer held is never asked, no later round runs, and the second task's turn, queued
    behind it, runs to its end."""
    model = Gated(
        {
            "Paint the logo": [ask("Which colour?"), AIResponse(content="Blue it is.")],
            "Write a slogan": [AIResponse(content="Slogan set.")],
        }
    )
    model.go["Write a slogan"].set()
    rooms = Recorded()
    world = World([], provider=model, rooms=rooms)
    async with world.http() as http:
        first = await world.send(http, text="Paint the logo", immediately=True)
        await model.asked["Paint the logo"].wait()
        second = asyncio.create_task(world.send(http, text="Write a slogan"))
        await rooms.stored["Write a slogan"].wait()
        canceled = await world.client(http).cancel_task(CancelTaskRequest(id=first.id))
        model.go["Paint the logo"].set()
        done = await second
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(done.status.message.parts)) == ["Slogan set."]
    assert model.calls == ["Paint the logo", "Write a slogan"]
    assert await world.handler.list_pending() == []


async def test_a_cut_turn_is_not_left_owed_in_a_durable_room_store(tmp_path: Path) -> None:
    """On a room store that journals its turns, the cut turn's record ends with the cancel:
    a re-drive after a restart does not run it again, and no follower waits for it."""
    model = Gated({"Paint the logo": [ask("Which colour?"), AIResponse(content="Blue.")]})
    rooms = SQLiteRoomStore(tmp_path / "rooms.db")
    world = World([], provider=model, rooms=rooms)
    async with world.http() as http:
        first = await world.send(http, text="Paint the logo", immediately=True)
        await model.asked["Paint the logo"].wait()
        assert len(await rooms.open_turns()) == 1
        canceled = await world.client(http).cancel_task(CancelTaskRequest(id=first.id))
    model.go["Paint the logo"].set()
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert await rooms.open_turns() == []
    assert await world.kit.resume_pending() == []
    assert model.calls == ["Paint the logo"]
    await rooms.close()

"""A follow-up that reaches a task while it still works (its turn runs, nothing asked yet)
waits in the SDK until the task holds: by then the task asks a question its sender never
saw, and the follow-up's text does not answer it."""

from __future__ import annotations

import asyncio

from a2a.helpers.proto_helpers import get_text_parts
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import Task, TaskState
from a2a_world import World, ask

from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse


class Held(AIProvider):
    """A model whose first round waits for the test, then asks; later rounds reply."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.rounds = 0

    @property
    def model_name(self) -> str:
        return "held"

    async def generate(self, context: AIContext) -> AIResponse:
        self.rounds += 1
        if self.rounds > 1:
            return AIResponse(content="Blue it is.")
        await self.go.wait()
        return ask()


class Watched(InMemoryTaskStore):
    """The SDK's task store, telling when the task :attr:`watched` is read, and when a task
    is stored with a status message holding one of the texts :attr:`awaited`."""

    def __init__(self) -> None:
        super().__init__()
        self.watched = ""
        self.read = asyncio.Event()
        self.awaited: tuple[str, ...] = ()
        self.stored = asyncio.Event()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        task = await super().get(task_id, context)
        if task_id == self.watched:
            self.read.set()
        return task

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        texts = get_text_parts(list(task.status.message.parts))
        if any(awaited in text for awaited in self.awaited for text in texts):
            self.stored.set()


async def test_text_sent_while_the_task_works_answers_no_later_question() -> None:
    """The text reached the task before it asked: the question stays open, the task says
    the text answered none and asks again; a data part naming the question then answers."""
    model, tasks = Held(), Watched()
    world = World([], provider=model, tasks=tasks)
    async with world.http() as http:
        task = await world.send(http, text="Paint it", immediately=True)
        assert task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED
        # Either the task asks again, or (the text taken as the answer) it replies.
        tasks.watched, tasks.awaited = task.id, ("answered none", "Blue it is.")
        follow_up = asyncio.create_task(world.send(http, text="blue", task=task))
        await tasks.read.wait()  # the follow-up reached the task, still working
        model.go.set()
        await follow_up
        await tasks.stored.wait()
        [request] = await world.handler.list_pending(room_id="ctx-1")
        assert request.result is None
        stored = await http.get(f"/tasks/{task.id}", headers={"A2A-Version": "1.0"})
        said = [part["text"] for part in stored.json()["status"]["message"]["parts"][:2]]
        assert said[0].startswith(f"The message reached task {task.id} while it worked")
        assert said[1] == "Which colour?"
        tasks.awaited, tasks.stored = ("Blue it is.",), asyncio.Event()
        data = {"pending_id": request.pending_id, "answer": "blue"}
        await world.send(http, data=data, task=task)
        await tasks.stored.wait()
    answered = await world.handler.get_request(request.pending_id)
    assert answered is not None
    assert (answered.result, answered.settled_by) == ("blue", "alice")

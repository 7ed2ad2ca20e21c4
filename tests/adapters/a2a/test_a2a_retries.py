"""A message sent again under its ``messageId`` (its reply lost) reaches the task its first
sending started: the person is asked once, an answer is taken once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from a2a.types import TaskState
from a2a.utils.errors import UnsupportedOperationError
from a2a_world import FileTaskStore, World, ask, asked, gone, restarted

from roomkit import HookTrigger
from roomkit.desk.stores import open_stores
from roomkit.providers.ai.base import AIResponse

DONE = AIResponse(content="Blue it is.")


def notified(world: World) -> list[str]:
    """The ids of the requests the kit tells people of, as it tells them."""
    told: list[str] = []

    @world.kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def tell(event: Any, context: Any) -> None:
        told.append(event.pending_id)

    return told


async def said(world: World) -> list[str]:
    return [event.content.body for event in await world.kit.store.list_events("ctx-1")]


async def test_a_first_message_sent_again_is_its_first_task() -> None:
    """Sent again without a task id: the same task, as it stands; no second turn, request
    or notification, and the room records the message once."""
    world = World([ask(), DONE, ask("Asked again?")])
    told = notified(world)
    async with world.http() as http:
        first = await world.send(http, text="Paint it", message_id="m-1")
        again = await world.send(http, text="Paint it", message_id="m-1")
        await world.kit.hooks.drain()
        [request] = await world.handler.list_pending(room_id="ctx-1")
        assert again.id == first.id
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert asked(again) == asked(first)
        assert told == [request.pending_id]
        assert len(world.provider.calls) == 1
        done = await world.send(http, text="blue", task=first)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert await said(world) == ["Paint it", "Blue it is."]


async def test_a_first_message_sent_twice_at_once_starts_one_task() -> None:
    world = World([ask(), DONE, ask("Asked again?")])
    told = notified(world)
    async with world.http() as http:
        first, second = await asyncio.gather(
            world.send(http, text="Paint it", message_id="m-1"),
            world.send(http, text="Paint it", message_id="m-1"),
        )
    await world.kit.hooks.drain()
    [request] = await world.handler.list_pending(room_id="ctx-1")
    assert first.id == second.id
    assert told == [request.pending_id]
    assert await said(world) == ["Paint it"]


async def test_a_follow_up_sent_again_answers_no_later_question() -> None:
    """The answer's reply lost, its message sent again once the turn asks a second
    question: the second question stays open for its own answer."""
    world = World([ask(), ask("Which shade?"), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        await world.send(http, text="blue", task=task, message_id="m-2")
        again = await world.send(http, text="blue", task=task, message_id="m-2")
    [request] = await world.handler.list_pending(room_id="ctx-1")
    assert request.arguments == {"question": "Which shade?"}
    assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    texts, [data] = asked(again)
    assert (texts, data["pending_id"]) == (["Which shade?"], request.pending_id)


async def test_another_callers_equal_message_id_starts_their_own_task() -> None:
    """Bob's message under Alice's ``messageId``, in her context: a task of his own, his
    message, never Alice's task."""
    world = World([ask(), DONE, AIResponse(content="Hello, Bob.")])
    async with world.http() as http:
        alices = await world.send(http, text="Paint it", message_id="m-1")
    await world.kit.add_participant("ctx-1", "bob")
    async with world.http("bob") as http:
        bobs = await world.send(http, text="Say hello", message_id="m-1")
    assert bobs.id != alices.id
    assert [message.parts[0].text for message in bobs.history] == ["Say hello"]
    async with world.http() as http:
        done = await world.send(http, text="blue", task=alices)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    [request] = await world.handler.list_settled()
    assert (request.result, request.settled_by) == ("blue", "alice")


async def test_a_message_sent_again_after_its_task_ended_runs_nothing() -> None:
    world = World([DONE, AIResponse(content="Twice.")])
    async with world.http() as http:
        done = await world.send(http, text="Paint it", message_id="m-1")
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        with pytest.raises(UnsupportedOperationError, match=f"{done.id} is in terminal state"):
            await world.send(http, text="Paint it", message_id="m-1")
    assert len(world.provider.calls) == 1
    assert await said(world) == ["Paint it", "Blue it is."]


async def test_a_message_sent_again_after_a_restart_is_its_first_task(tmp_path: Path) -> None:
    """The ids need no record: on a durable task store, the next server process takes the
    message sent again to the task the first one left waiting."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    questions, rooms = open_stores(url)
    first = World([ask()], questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path))
    async with first.http() as http:
        task = await first.send(http, text="Paint it", message_id="m-1")
    [request] = await first.handler.list_pending(room_id="ctx-1")
    await gone(first, questions, rooms)
    script = [DONE, ask("Asked again?")]
    async with restarted(url, tmp_path, script) as world, world.http() as http:
        again = await world.send(http, text="Paint it", message_id="m-1")
        assert again.id == task.id
        pending = await world.handler.list_pending()
        assert [r.pending_id for r in pending] == [request.pending_id]
        done = await world.send(http, text="blue", task=again)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert asked(done)[0] == ["Blue it is."]

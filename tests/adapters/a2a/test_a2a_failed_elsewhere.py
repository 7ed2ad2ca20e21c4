"""A task whose turn fails in another process: the server that runs it takes the answer a
follow-up in this process gave, and its model raises. The task ends ``failed``, with the
words the follow-up there would get (it used to end ``completed``, as if the message had
been handled); the follow-up sent again is refused, the task read back telling the same.
On every durable store, the server running the turn a process of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import GetTaskRequest, TaskState
from a2a.utils.errors import UnsupportedOperationError
from a2a_world import FileTaskStore, World
from tests.adapters.door_peer import PATIENCE, asking_peer
from tests.adapters.fragile_model import Fragile
from tests.core.room_stores import Place


async def test_a_turn_failing_in_another_process_fails_the_task(
    place: Place, tmp_path: Path
) -> None:
    questions, rooms = place.questions(), place.rooms()
    tasks = FileTaskStore(tmp_path)
    world = World([], questions=questions, rooms=rooms, tasks=tasks, provider=Fragile())
    try:
        async with asking_peer(place, "a2a", tmp_path, fragile=True) as said:
            task: Any = SimpleNamespace(id=said["task"])
            async with world.http() as http:
                async with asyncio.timeout(PATIENCE):
                    ended = await world.send(http, text="blue", task=task)
                # Its answer lost, the caller sends the follow-up again.
                with pytest.raises(UnsupportedOperationError, match="terminal state"):
                    await world.send(http, text="blue", task=task)
                again = await world.client(http).get_task(GetTaskRequest(id=task.id))
    finally:
        await world.kit.close()
        await questions.close()
        await rooms.close()
    # The context goes on on a server started now: the failed turn shows in no later task.
    questions, rooms = place.questions(), place.rooms()
    world = World([], questions=questions, rooms=rooms, tasks=tasks, provider=Fragile())
    try:
        async with world.http() as http:
            later = await world.send(http, text="Hello")
    finally:
        await world.kit.close()
        await questions.close()
        await rooms.close()
    assert ended.status.state == TaskState.TASK_STATE_FAILED, ended.status
    assert get_text_parts(list(ended.status.message.parts)) == [
        f"A2A message of task {said['task']} was recorded but not handled: its turn failed "
        "(RuntimeError); send it again as a new message"
    ]
    assert again.status.state == TaskState.TASK_STATE_FAILED, again.status
    assert again.status.message.parts == ended.status.message.parts
    assert later.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(later.status.message.parts)) == ["Echo: Hello"]

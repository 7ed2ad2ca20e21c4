"""A context whose turn no process runs: the server that ran it was killed and none called
``resume_pending()``. A follow-up answering the task's question fails the task at once,
saying so (it used to wait until the client left); the answer is kept for the turn, which
goes on once ``resume_pending()`` runs. On every durable store, the killed server a process
of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import TaskState
from a2a_world import FileTaskStore, World
from tests.adapters.door_peer import LEASE, PATIENCE, killed_after_asking
from tests.core.room_stores import Place
from tests.servers.stores import Ahead

from roomkit.providers.ai.base import AIResponse

DONE = AIResponse(content="Blue it is.")


async def test_an_answer_to_a_turn_no_process_runs_fails_the_task(
    place: Place, tmp_path: Path
) -> None:
    said = await killed_after_asking(place, "a2a", tmp_path)
    # One lease after the kill: the clock is moved, not waited for.
    clock = Ahead()
    await clock.move(LEASE + 1)
    questions, rooms = place.questions(), place.rooms()
    tasks = FileTaskStore(tmp_path)
    world = World([DONE], questions=questions, rooms=rooms, tasks=tasks, clock=clock)
    try:
        async with world.http() as http, asyncio.timeout(PATIENCE):
            task: Any = SimpleNamespace(id=said["task"])
            ended = await world.send(http, text="blue", task=task)
        [settled] = await world.handler.list_settled(actor_ids=["alice"])
        # The answer is kept: the turn goes on with it once the server resumes it.
        replies = await world.kit.resume_pending()
    finally:
        await world.kit.close()
        await questions.close()
        await rooms.close()
    assert ended.status.state == TaskState.TASK_STATE_FAILED
    [text] = get_text_parts(list(ended.status.message.parts))
    assert "resume_pending()" in text
    assert (settled.status, settled.result) == ("resolved", "blue")
    assert [reply.content.body for reply in replies] == ["Blue it is."]

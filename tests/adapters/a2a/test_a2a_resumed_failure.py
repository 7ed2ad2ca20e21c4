"""A task whose turn a restart re-drives and that fails there: the server that ran the turn
was killed while it asked, a follow-up in this process answers, and another server's
``resume_pending()`` carries the turn on, where the model raises. The task ends ``failed``
with the words the door gives a failed message (it used to end ``completed``, empty: the
failure named the message otherwise). On every durable store, the killed server a process
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
from tests.adapters.fragile_model import Fragile
from tests.core.room_stores import Place
from tests.servers.stores import Ahead


async def test_a_resumed_turn_that_fails_fails_the_task(place: Place, tmp_path: Path) -> None:
    said = await killed_after_asking(place, "a2a", tmp_path)
    # The follower reads the killed server's lease as running; the restarted server's clock
    # is one lease on, so it takes the turn over (moved, not waited for).
    clock = Ahead()
    await clock.move(LEASE + 1)
    tasks = FileTaskStore(tmp_path)
    questions, rooms = place.questions(), place.rooms()
    follower = World([], questions=questions, rooms=rooms, tasks=tasks, provider=Fragile())
    again, stored = place.questions(), place.rooms()
    restarted = World(
        [], questions=again, rooms=stored, tasks=tasks, provider=Fragile(), clock=clock
    )
    try:
        async with follower.http() as http, asyncio.timeout(PATIENCE):
            task: Any = SimpleNamespace(id=said["task"])
            # The resumed turn waits for the answer the follow-up gives, then fails.
            ended, replies = await asyncio.gather(
                follower.send(http, text="blue", task=task), restarted.kit.resume_pending()
            )
    finally:
        await follower.kit.close()
        await restarted.kit.close()
        for store in (questions, rooms, again, stored):
            await store.close()
    assert replies == []
    assert ended.status.state == TaskState.TASK_STATE_FAILED, ended.status
    assert get_text_parts(list(ended.status.message.parts)) == [
        f"A2A message of task {said['task']} was recorded but not handled: its turn failed "
        "(RuntimeError); send it again as a new message"
    ]

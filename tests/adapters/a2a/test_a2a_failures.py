"""A turn that fails (its model raises, the room store cannot record the message) ends the
A2A task following it ``failed``, saying the message was not handled: never ``completed``
with nothing in it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import GetTaskRequest, Task, TaskState
from a2a.utils.errors import UnsupportedOperationError
from a2a_world import World
from tests.adapters.fragile_model import Fragile

from roomkit.core.store import turn_journal
from roomkit.stores.sqlite import SQLiteRoomStore


def failed(task: Task) -> str:
    """The last text of the task's end, a turn's failure."""
    assert task.status.state == TaskState.TASK_STATE_FAILED, task.status
    said = get_text_parts(list(task.status.message.parts))[-1]
    assert "send it again" in said
    return said


def replied(task: Task) -> list[str]:
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
    return get_text_parts(list(task.status.message.parts))


async def test_a_turn_whose_model_fails_ends_the_task_failed() -> None:
    world = World([], provider=Fragile())
    async with world.http() as http:
        said = failed(await world.send(http, text="Break"))
        assert "RuntimeError" in said
        # The context goes on: the next task is run and answered.
        assert replied(await world.send(http, text="Hello")) == ["Echo: Hello"]


async def test_a_message_the_room_store_cannot_record_ends_the_task_failed(
    tmp_path: Path,
) -> None:
    """The store refuses writes while the message is recorded: the task says the message
    was not recorded; once the store is back, a task sending it again has it run."""
    path = tmp_path / "rooms.db"
    rooms = SQLiteRoomStore(path, busy_timeout=0)
    world = World([], rooms=rooms, provider=Fragile())
    try:
        async with world.http() as http:
            assert replied(await world.send(http, text="Hello")) == ["Echo: Hello"]
            locker = sqlite3.connect(path, isolation_level=None)
            try:
                # Another connection holds the write lock: reads go on, writes fail at once.
                locker.execute("BEGIN IMMEDIATE")
                assert "not recorded" in failed(await world.send(http, text="Paint it"))
            finally:
                locker.execute("ROLLBACK")
                locker.close()
            assert replied(await world.send(http, text="Paint it")) == ["Echo: Paint it"]
    finally:
        await world.kit.close()
        await rooms.close()


async def test_a_failed_turn_on_a_durable_store_leaves_no_turn_owed(tmp_path: Path) -> None:
    rooms = SQLiteRoomStore(tmp_path / "rooms.db")
    world = World([], rooms=rooms, provider=Fragile())
    try:
        async with world.http() as http:
            failed(await world.send(http, text="Break"))
            journal = turn_journal(world.kit.store)
            assert journal is not None
            assert await journal.open_turns() == []
            assert replied(await world.send(http, text="Hello")) == ["Echo: Hello"]
    finally:
        await world.kit.close()
        await rooms.close()


async def test_a_turn_that_fails_after_a_follow_up_ends_the_task_failed() -> None:
    world = World([], provider=Fragile())
    async with world.http() as http:
        task = await world.send(http, text="Ask")
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        failed(await world.send(http, text="blue", task=task))


async def test_a_follow_up_sent_again_after_its_turn_failed_reads_the_failure() -> None:
    """The caller lost the answer to its follow-up and sends it again: the task ended
    ``failed``, so the message is refused, and the task read back tells the failure."""
    world = World([], provider=Fragile())
    async with world.http() as http:
        task = await world.send(http, text="Ask")
        said = failed(await world.send(http, text="blue", task=task))
        with pytest.raises(UnsupportedOperationError, match="terminal state"):
            await world.send(http, text="blue", task=task)
        again = await world.client(http).get_task(GetTaskRequest(id=task.id))
    assert failed(again) == said


async def test_a_failed_turn_in_one_context_leaves_another_contexts_task_whole() -> None:
    world = World([], provider=Fragile())
    async with world.http() as http:
        broken, whole = await asyncio.gather(
            world.send(http, text="Break", context_id="ctx-1"),
            world.send(http, text="Hello", context_id="ctx-2"),
        )
    failed(broken)
    assert replied(whole) == ["Echo: Hello"]

"""A turn that fails (its model raises, the room store cannot record the message) ends the
run that follows it in ``RUN_ERROR``, saying the message was not handled: never a success
with nothing in it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from ag_ui.core import EventType
from agui_front import Front, interrupts, parse, texts
from tests.adapters.fragile_model import Fragile

from roomkit.core.store import turn_journal
from roomkit.stores.sqlite import SQLiteRoomStore


def failed(events: list[Any]) -> Any:
    """The run's terminal event, a ``RUN_ERROR`` of a failed turn."""
    error = events[-1]
    assert error.type == EventType.RUN_ERROR, error
    assert error.code == "turn_failed"
    assert "send it again" in error.message
    return error


async def test_a_turn_whose_model_fails_ends_the_run_in_run_error() -> None:
    front = Front([], provider=Fragile())
    try:
        error = failed(await front.run("Break"))
        assert "AG-UI message m0" in error.message
        assert "RuntimeError" in error.message
        # The thread goes on: the next message is run and answered.
        events = await front.run("Hello")
        assert events[-1].type == EventType.RUN_FINISHED
        assert texts(events) == ["Echo: Hello"]
    finally:
        await front.close()


async def test_a_message_the_room_store_cannot_record_ends_the_run_in_run_error(
    tmp_path: Path,
) -> None:
    """The store refuses writes while the message is recorded: the run says the message was
    not recorded; once the store is back, the client sending it again has it run."""
    path = tmp_path / "rooms.db"
    rooms = SQLiteRoomStore(path, busy_timeout=0)
    front = Front([], rooms=rooms, provider=Fragile())
    try:
        assert texts(await front.run("Hello")) == ["Echo: Hello"]
        locker = sqlite3.connect(path, isolation_level=None)
        try:
            # Another connection holds the write lock: reads go on, writes fail at once.
            locker.execute("BEGIN IMMEDIATE")
            error = failed(await front.run("Paint it"))
            assert "not recorded" in error.message
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        events = await front.run()
        assert events[-1].type == EventType.RUN_FINISHED
        assert texts(events) == ["Echo: Paint it"]
    finally:
        await front.close()
        await rooms.close()


async def test_a_failed_turn_on_a_durable_store_leaves_no_turn_owed(tmp_path: Path) -> None:
    """Told to send the message again, the client does: the failed turn is not kept for a
    re-drive, and the next run on the thread ends."""
    rooms = SQLiteRoomStore(tmp_path / "rooms.db")
    front = Front([], rooms=rooms, provider=Fragile())
    try:
        failed(await front.run("Break"))
        journal = turn_journal(front.kit.store)
        assert journal is not None
        assert await journal.open_turns() == []
        events = await front.run("Hello")
        assert events[-1].type == EventType.RUN_FINISHED
        assert texts(events) == ["Echo: Hello"]
    finally:
        await front.close()
        await rooms.close()


async def test_a_turn_that_fails_after_a_resume_ends_the_resuming_run_in_run_error() -> None:
    front = Front([], provider=Fragile())
    try:
        [interrupt] = interrupts(await front.run("Ask"))
        resume = {"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "x"}}
        error = failed(await front.run(resume=[resume]))
        assert "AG-UI message m0" in error.message
    finally:
        await front.close()


async def test_a_failed_turn_on_one_thread_leaves_another_threads_run_whole() -> None:
    front = Front([], provider=Fragile())

    def body(thread: str, text: str) -> dict[str, Any]:
        return {
            "threadId": thread,
            "runId": f"run-{thread}",
            "messages": [{"id": "m0", "role": "user", "content": text}],
        }

    try:
        broken, whole = await asyncio.gather(
            front.post(body("t1", "Break")), front.post(body("t2", "Hello"))
        )
        failed(parse(broken.text))
        events = parse(whole.text)
        assert events[-1].type == EventType.RUN_FINISHED
        assert events[-1].outcome is None or events[-1].outcome.type == "success"
        assert texts(events) == ["Echo: Hello"]
    finally:
        await front.close()

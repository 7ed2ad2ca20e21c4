"""A thread's room made, and the process that made it stopped before its person was on the
roster: the person's next run, in any process on the store, finishes opening it."""

from __future__ import annotations

from pathlib import Path

from ag_ui.core import EventType
from agui_front import Front, texts

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.models.room import ChannelBinding, Participant
from roomkit.providers.ai.base import AIResponse
from roomkit.stores.sqlite import SQLiteRoomStore


class StopsAfterTheRoom(SQLiteRoomStore):
    """A room store whose database goes away once a room is made: no roster or binding is
    written after it, as when the process is killed between those writes."""

    async def add_participant(self, participant: Participant) -> None:
        raise StoreUnavailableError("The database went away")

    async def add_binding(self, binding: ChannelBinding) -> None:
        raise StoreUnavailableError("The database went away")


async def test_a_thread_whose_opening_stopped_opens_on_its_persons_next_run(
    tmp_path: Path,
) -> None:
    """The first run made the room and stopped there (``run_failed``); the same person's
    next run, in a new process, is served (it was refused as another person's thread)."""
    path = tmp_path / "kit.db"
    first = Front([AIResponse(content="Unused.")], rooms=StopsAfterTheRoom(path))
    try:
        stopped = await first.run("Hello", thread="t1")
    finally:
        await first.close()
    assert (stopped[-1].type, stopped[-1].code) == (EventType.RUN_ERROR, "run_failed")
    later = Front([AIResponse(content="Hello.")], rooms=SQLiteRoomStore(path))
    later.messages = first.messages
    try:
        events = await later.run(thread="t1")
        assert events[-1].type == EventType.RUN_FINISHED
        assert texts(events) == ["Hello."]
        other = await later.post({"threadId": "t1", "runId": "r", "messages": []}, actor="bob")
        assert other.status_code == 404
    finally:
        await later.close()

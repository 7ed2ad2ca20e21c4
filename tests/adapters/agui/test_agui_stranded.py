"""A thread whose turn no process runs: the server that ran it was killed and none called
``resume_pending()``. A resume run ends at once with ``RUN_ERROR`` saying so (it used to
wait until the client left); the answer is kept for the turn, which goes on once
``resume_pending()`` runs. On every durable store, the killed server a process of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ag_ui.core import EventType
from agui_front import DONE, Front, texts
from tests.adapters.door_peer import LEASE, PATIENCE, killed_after_asking
from tests.core.room_stores import Place
from tests.servers.stores import Ahead


async def test_a_resume_of_a_turn_no_process_runs_ends_in_run_error(
    place: Place, tmp_path: Path
) -> None:
    said = await killed_after_asking(place, "agui", tmp_path)
    # One lease after the kill: the clock is moved, not waited for.
    clock = Ahead()
    await clock.move(LEASE + 1)
    questions, rooms = place.questions(), place.rooms()
    front = Front([DONE], questions=questions, rooms=rooms, clock=clock)
    front.messages = said["messages"]
    resume = [
        {"interruptId": said["interrupt"], "status": "resolved", "payload": {"answer": "blue"}}
    ]
    try:
        async with asyncio.timeout(PATIENCE):
            events = await front.run(resume=resume)
        # The answer is kept: the turn goes on with it once the server resumes it.
        replies = await front.kit.resume_pending()
    finally:
        await front.close()
        await questions.close()
        await rooms.close()
    assert (events[-1].type, events[-1].code) == (EventType.RUN_ERROR, "turn_not_running")
    assert "resume_pending()" in events[-1].message
    assert texts(events) == []
    assert [reply.content.body for reply in replies] == ["Blue it is."]

"""A thread whose turn a restart re-drives and that fails there: the server that ran the
turn was killed while it asked, a resume run in this process answers, and another server's
``resume_pending()`` carries the turn on, where the model raises. The run ends with
``RUN_ERROR`` (``turn_failed``) and the words the door gives a failed message (the failure
used to name the message by its place in the room). On every durable store, the killed
server a process of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ag_ui.core import EventType
from agui_front import Front
from tests.adapters.door_peer import LEASE, PATIENCE, killed_after_asking
from tests.adapters.fragile_model import Fragile
from tests.core.room_stores import Place
from tests.servers.stores import Ahead


async def test_a_resumed_turn_that_fails_ends_the_run_in_error(
    place: Place, tmp_path: Path
) -> None:
    said = await killed_after_asking(place, "agui", tmp_path)
    # The follower reads the killed server's lease as running; the restarted server's clock
    # is one lease on, so it takes the turn over (moved, not waited for).
    clock = Ahead()
    await clock.move(LEASE + 1)
    questions, rooms = place.questions(), place.rooms()
    follower = Front([], questions=questions, rooms=rooms, provider=Fragile())
    follower.messages = said["messages"]
    again, stored = place.questions(), place.rooms()
    restarted = Front([], questions=again, rooms=stored, provider=Fragile(), clock=clock)
    resume = [
        {"interruptId": said["interrupt"], "status": "resolved", "payload": {"answer": "blue"}}
    ]
    try:
        async with asyncio.timeout(PATIENCE):
            # The resumed turn waits for the answer the run gives, then fails.
            events, replies = await asyncio.gather(
                follower.run(resume=resume), restarted.kit.resume_pending()
            )
    finally:
        await follower.close()
        await restarted.close()
        for store in (questions, rooms, again, stored):
            await store.close()
    assert replies == []
    error = events[-1]
    assert (error.type, getattr(error, "code", None)) == (EventType.RUN_ERROR, "turn_failed"), error
    assert error.message == (
        "AG-UI message m0 was recorded but not handled: its turn failed (RuntimeError); "
        "send it again as a new message"
    )

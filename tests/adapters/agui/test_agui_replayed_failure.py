"""A resume sent again after its turn failed: the client lost the stream of the run that told
the failure, and replays the resume with the conversation it held. The replay ends with the
same ``RUN_ERROR`` (``turn_failed``) as the run it replays (it used to end with
``RUN_FINISHED``, as if the message had been handled), whether the turn failed in this
process or in another; on the memory store, and on every durable store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ag_ui.core import EventType
from agui_front import Front, interrupts, texts
from tests.adapters.door_peer import PATIENCE, asking_peer
from tests.adapters.fragile_model import Fragile
from tests.core.room_stores import Place

TOLD = (
    "AG-UI message m0 was recorded but not handled: its turn failed (RuntimeError); "
    "send it again as a new message"
)


def answer(interrupt_id: str) -> list[dict[str, Any]]:
    return [{"interruptId": interrupt_id, "status": "resolved", "payload": {"answer": "blue"}}]


async def replayed(front: Front, held: list[dict[str, Any]], interrupt_id: str) -> list[Any]:
    """The events of the resume of ``interrupt_id`` sent again by a client holding ``held``."""
    front.messages = list(held)
    return await front.run(resume=answer(interrupt_id))


def told_again(first: list[Any], again: list[Any]) -> None:
    """``again`` replays the resume of ``first``, which told the failure: it tells the same."""
    error = first[-1]
    assert (error.type, getattr(error, "code", None)) == (EventType.RUN_ERROR, "turn_failed"), error
    assert error.message == TOLD
    # The whole event on a miss: a RUN_FINISHED says which outcome the run ended with.
    assert again[-1].type == EventType.RUN_ERROR, again[-1]
    assert (again[-1].code, again[-1].message) == (error.code, error.message)
    assert [e.type for e in again] == [
        EventType.RUN_STARTED,
        EventType.TOOL_CALL_RESULT,
        EventType.RUN_ERROR,
    ]


async def replayed_here(front: Front) -> None:
    """Ask, resume, then the same resume again: the replay tells the failure; a client that
    moves on with a new message is not told it."""
    [interrupt] = interrupts(await front.run("Ask"))
    held = list(front.messages)
    first = await replayed(front, held, interrupt.id)
    again = await replayed(front, held, interrupt.id)
    later = await front.run("Hello")
    told_again(first, again)
    assert later[-1].type == EventType.RUN_FINISHED
    assert texts(later) == ["Echo: Hello"]


async def test_a_replayed_resume_tells_the_failure_again() -> None:
    front = Front([], provider=Fragile())
    try:
        await replayed_here(front)
    finally:
        await front.close()


async def test_a_replayed_resume_tells_the_failure_again_on_a_durable_store(
    place: Place,
) -> None:
    questions, rooms = place.questions(), place.rooms()
    front = Front([], questions=questions, rooms=rooms, provider=Fragile())
    try:
        await replayed_here(front)
    finally:
        await front.close()
        await questions.close()
        await rooms.close()


async def test_a_replayed_resume_tells_a_failure_in_another_process_again(
    place: Place, tmp_path: Path
) -> None:
    """The turn fails in the server that asked; the resume, and its replays, reach this
    one, then a server started now."""
    questions, rooms = place.questions(), place.rooms()
    front = Front([], questions=questions, rooms=rooms, provider=Fragile())
    try:
        async with asking_peer(place, "agui", tmp_path, fragile=True) as said:
            held = said["messages"]
            async with asyncio.timeout(PATIENCE):
                first = await replayed(front, held, said["interrupt"])
            again = await replayed(front, held, said["interrupt"])
    finally:
        await front.close()
        await questions.close()
        await rooms.close()
    questions, rooms = place.questions(), place.rooms()
    front = Front([], questions=questions, rooms=rooms, provider=Fragile())
    try:
        elsewhere = await replayed(front, held, said["interrupt"])
    finally:
        await front.close()
        await questions.close()
        await rooms.close()
    told_again(first, again)
    told_again(first, elsewhere)

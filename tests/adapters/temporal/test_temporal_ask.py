"""A workflow asks a person, the desk answers, the workflow resumes once."""

from __future__ import annotations

from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.workflows import Ask


async def test_a_workflow_asks_and_the_desk_answers(world: World) -> None:
    async with running(world.worker(Ask), world.notifier()):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        answered = await world.answer(pending_id, "alice", {"answer": "Hotel Lisboa"})
        result = await handle.result()
    assert answered.status_code == 200, answered.text
    assert result == {"answer": "Hotel Lisboa"}
    history = await world.desk_handler.history(pending_id)
    delivered = [entry for entry in history if entry["type"] == "delivered"]
    assert [(e["accepted"], e["workflow_id"]) for e in delivered] == [(True, handle.id)]

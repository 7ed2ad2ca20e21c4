"""Workflow ids Temporal takes that are long as JSON: a workflow id up to 1,000 bytes of
quotes, backslashes or control characters, which JSON writes up to six times as long, still
asks a person and takes the answer (a reset run of one re-attaches to its question: in
``test_temporal_cancel_reset``)."""

from __future__ import annotations

import pytest
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.workflows import Ask

from roomkit.models.json_limits import MAX_SCOPED_KEY_BYTES

LONG_AS_JSON = ['"' * 1_000, "\\" * 1_000, "\x01" * 1_000, "wf-" + '"' * 996]
"""Workflow ids of Temporal's longest (1,000 bytes) whose key with its scope is past
:data:`MAX_SCOPED_KEY_BYTES` as a store keeps it."""


@pytest.mark.parametrize(
    "workflow_id", LONG_AS_JSON, ids=["quotes", "backslashes", "controls", "prefixed"]
)
async def test_a_workflow_whose_id_is_long_as_json_asks_and_takes_the_answer(
    world: World, workflow_id: str
) -> None:
    async with running(world.worker(Ask), world.notifier()):
        handle = await world.start(Ask, {}, id=workflow_id)
        pending_id = await world.created.next()
        answered = await world.answer(pending_id, "alice", {"answer": "Hotel Lisboa"})
        result = await handle.result()
    assert answered.status_code == 200, answered.text
    assert result == {"answer": "Hotel Lisboa"}
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    assert request.key is not None
    assert len(request.key.encode()) <= MAX_SCOPED_KEY_BYTES
    assert request.tool_call_id.endswith(f":{workflow_id}")

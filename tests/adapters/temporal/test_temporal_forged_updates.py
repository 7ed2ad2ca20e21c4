"""An update someone with access to Temporal made up: each field of the wrong type or size is
refused by the validator with a message naming the field and what it takes, and the person's
real answer still reaches the workflow."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import wait_for_event, waiting
from tests.adapters.temporal.workflows import Approve, Ask

from roomkit.adapters.temporal import UPDATE_NAME
from roomkit.models.pending_input import arguments_digest

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)

QUESTION_FORGERIES: list[tuple[dict[str, Any], str]] = [
    ({"status": ["resolved"]}, "status is one of 'rejected', 'resolved', 'timed_out'"),
    ({"status": {"resolved": 1}}, "status is one of 'rejected', 'resolved', 'timed_out'"),
    ({"status": "resolved", "result": {"answer": 1}}, "result is text or null"),
    ({"status": "rejected", "reason": ["no"]}, "reason is text or null"),
    ({"status": "rejected", "withdrawn": "yes"}, "withdrawn is true or false"),
    ({"status": "timed_out", "default": ["a"]}, "default is text or null"),
    ({"status": "resolved", "by": 7}, "by is text or null"),
    # Not echoed back: a refusal past Temporal's payload limit fails the workflow task.
    ({"pending_id": "p" * 1_500_000}, "pending_id is an id of at most 256 characters"),
    # Not echoed back either: a message UTF-8 cannot encode reaches the caller as none.
    ({"pending_id": "p-\ud800"}, "pending_id must hold valid Unicode text"),
    # A store keeps no such text: a made-up update's, taken, would reach the workflow.
    ({"status": "resolved", "result": "Hotel \ud800"}, "result must hold valid Unicode text"),
    ({"status": "rejected", "reason": "\udc80 no"}, "reason must hold valid Unicode text"),
    ({"status": "resolved", "by": "al\ud800"}, "by must hold valid Unicode text"),
    ({"status": "timed_out", "default": "a\ud800"}, "default must hold valid Unicode text"),
    ({"status": "resolved", "key": "k\ud800"}, "key must hold valid Unicode text"),
    # Quoted cut short.
    ({"status": "s" * 1_000_000}, "(the request has settled), got 'sss"),
    # Quoted with its line breaks escaped.
    ({"pending_id": "p\n" * 100}, "request 'p\\np\\n"),
]


async def _forged(
    world: World, workflow: Any, asked: tuple[str, dict[str, Any]], forgeries: Any, answer: Any
) -> tuple[list[str], Any]:
    """Each forgery sent as an update to the workflow's first ask, then the person's
    ``answer`` given on the desk: the refusals' messages, and the workflow's result."""
    outcome = {"seq": 1, "digest": arguments_digest(*asked)}
    refusals = []
    async with running(world.worker(workflow), world.notifier()):
        handle = await world.start(workflow, {})
        outcome["pending_id"] = await world.created.next()
        await wait_for_event(handle, waiting)
        for fields, _ in forgeries:
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(UPDATE_NAME, {**outcome, **fields})
            refusals.append(str(refused.value.cause))
        await world.answer(outcome["pending_id"], "alice", answer)
        return refusals, await handle.result()


@SQLITE_ONLY
async def test_a_forged_question_outcome_of_the_wrong_shape_is_refused_naming_the_field(
    world: World,
) -> None:
    asked = ("choose", {"question": "Which hotel?"})
    answer = {"answer": "Hotel Lisboa"}
    refusals, result = await _forged(world, Ask, asked, QUESTION_FORGERIES, answer)
    for refusal, (_, expected) in zip(refusals, QUESTION_FORGERIES, strict=True):
        assert expected in refusal, refusal
        assert "unhashable" not in refusal
        assert len(refusal) < 1_000, len(refusal)
        assert "\n" not in refusal
    assert result == {"answer": "Hotel Lisboa"}


APPROVAL_FORGERIES: list[tuple[dict[str, Any], str]] = [
    (
        {"status": "resolved", "result": '{"decision": "approve"}', "arguments": [1, 2]},
        "arguments is an object of the call's arguments or null",
    ),
    ({"status": "resolved", "result": "yes"}, "result is no decision"),
    ({"status": "timed_out", "default": "yes"}, "default is no decision"),
]


@SQLITE_ONLY
async def test_a_forged_approval_outcome_holding_no_decision_is_refused(world: World) -> None:
    asked = ("book", {"trip": "Lisbon", "amount": 900})
    answer = {"decision": "approve", "digest": arguments_digest(*asked)}
    refusals, result = await _forged(world, Approve, asked, APPROVAL_FORGERIES, answer)
    for refusal, (_, expected) in zip(refusals, APPROVAL_FORGERIES, strict=True):
        assert expected in refusal, refusal
    assert result["decision"] == "approve"

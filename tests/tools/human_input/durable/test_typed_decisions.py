"""Typed decisions settle approvals on every store as their JSON text does."""

from __future__ import annotations

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import HumanInputRejectedError
from roomkit.tools.approvals import Approve, Edit, Reject, Respond, read_decision

SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer"}}}


async def test_each_typed_decision_settles_an_approval(make_handler: HandlerFactory) -> None:
    for decision in (Approve(), Edit(arguments={"amount": 3}), Respond(message="done")):
        held = await make_handler().create_approval(
            "pay", {"amount": 1}, approvers=["ann"], tool_schema=SCHEMA
        )
        assert await make_handler().aresolve(held.pending_id, decision, by="ann")
        answer = await make_handler().wait(held.pending_id, timeout=5)
        assert type(answer) is str
        assert answer == decision
        assert read_decision(answer) == decision
        history = await make_handler().history(held.pending_id)
        assert history[-2]["decision"] == decision.kind


async def test_a_typed_rejection_rejects_with_its_reason(make_handler: HandlerFactory) -> None:
    held = await make_handler().create_approval("pay", {"amount": 1}, approvers=["ann"])
    assert await make_handler().aresolve(held.pending_id, Reject(reason="not today"), by="ann")
    with pytest.raises(HumanInputRejectedError, match="not today"):
        await make_handler().wait(held.pending_id, timeout=5)


async def test_a_quorum_settles_on_typed_votes(make_handler: HandlerFactory) -> None:
    held = await make_handler().create_approval(
        "pay", {"amount": 1}, approvers=["ann", "bob"], tool_schema=SCHEMA, quorum=2
    )
    assert await make_handler().aresolve(held.pending_id, Edit({"amount": 2}), by="ann")
    assert await make_handler().aresolve(held.pending_id, Approve(), by="bob")
    answer = await make_handler().wait(held.pending_id, timeout=5)
    assert answer == Edit({"amount": 2})

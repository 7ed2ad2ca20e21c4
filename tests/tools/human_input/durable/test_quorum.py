"""Quorum approvals on every store: votes, refusals, vetoes, edits and expiry.

Each test holds a call for a quorum of the listed approvers and votes through the handler,
as the desk and the CLI do; on a durable store the votes come from a second handler with a
store object of its own, as from another process.
"""

from __future__ import annotations

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit import AsyncSettleRequiredError, InvalidAnswerError, VoteNeedsActorError
from roomkit.core.exceptions import HumanInputRejectedError, HumanInputTimeoutError
from roomkit.models.pending_input import PendingInput, PendingInputStatus, arguments_digest
from roomkit.tools.approvals import approve, edit, reject, respond

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}},
    "required": ["amount"],
    "additionalProperties": False,
}
PEOPLE = ["alice", "bob", "carol"]


async def hold(
    make_handler: HandlerFactory,
    quorum: int = 2,
    *,
    veto: bool = True,
    timeout: float | None = None,
) -> PendingInput:
    return await make_handler().create_approval(
        "transfer",
        {"amount": 10},
        approvers=PEOPLE,
        tool_schema=SCHEMA,
        quorum=quorum,
        veto=veto,
        timeout=timeout,
    )


async def read(make_handler: HandlerFactory, pending_id: str) -> PendingInput:
    record = await make_handler().get_request(pending_id)
    assert record is not None
    return record


async def test_two_of_three_approve_and_the_call_is_approved(make_handler: HandlerFactory) -> None:
    held = await hold(make_handler)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice", surface="desk")
    record = await read(make_handler, held.pending_id)
    assert record.status is PendingInputStatus.PENDING
    assert record.approvers == ("bob", "carol")
    assert [(vote.actor, vote.decision) for vote in record.votes] == [("alice", "approve")]
    assert record.votes[0].digest == held.arguments_digest
    assert await desk.aresolve(held.pending_id, approve(), by="carol", surface="cli")
    assert await make_handler().wait(held.pending_id, timeout=5) == approve()
    record = await read(make_handler, held.pending_id)
    assert (record.status, record.settled_by) == (PendingInputStatus.RESOLVED, "carol")
    history = await desk.history(held.pending_id)
    assert [entry["type"] for entry in history] == ["created", "voted", "voted", "settled"]
    voted = history[1]
    assert (voted["actor"], voted["surface"], voted["decision"]) == ("alice", "desk", "approve")
    assert voted["digest"] == held.arguments_digest
    assert history[3]["approvers"] == ["alice", "carol"]
    assert history[3]["status"] == "resolved"


async def test_refused_votes_change_nothing(make_handler: HandlerFactory) -> None:
    held = await hold(make_handler)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert not await desk.aresolve(held.pending_id, approve(), by="alice")
    assert not await desk.aresolve(held.pending_id, reject("changed my mind"), by="alice")
    assert not await desk.aresolve(held.pending_id, approve(), by="mallory")
    with pytest.raises(VoteNeedsActorError, match="by="):
        await desk.aresolve(held.pending_id, approve())
    with pytest.raises(InvalidAnswerError, match="amount"):
        await desk.aresolve(held.pending_id, edit({"amount": "lots"}), by="bob")
    with pytest.raises(InvalidAnswerError, match="respond"):
        await desk.aresolve(held.pending_id, respond("done"), by="bob")
    record = await read(make_handler, held.pending_id)
    assert [vote.actor for vote in record.votes] == ["alice"]
    assert record.arguments == {"amount": 10}
    assert record.status is PendingInputStatus.PENDING
    assert [entry["type"] for entry in await desk.history(held.pending_id)] == [
        "created",
        "voted",
    ]
    assert await desk.aresolve(held.pending_id, approve(), by="bob")
    assert not await desk.aresolve(held.pending_id, approve(), by="carol")
    record = await read(make_handler, held.pending_id)
    assert [vote.actor for vote in record.votes] == ["alice", "bob"]


async def test_one_rejection_vetoes(make_handler: HandlerFactory) -> None:
    held = await hold(make_handler)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert await desk.areject(held.pending_id, "over budget", by="bob")
    with pytest.raises(HumanInputRejectedError, match="over budget"):
        await make_handler().wait(held.pending_id, timeout=5)
    record = await read(make_handler, held.pending_id)
    assert (record.status, record.settled_by) == (PendingInputStatus.REJECTED, "bob")
    assert not await desk.aresolve(held.pending_id, approve(), by="carol")
    history = await desk.history(held.pending_id)
    assert [entry["type"] for entry in history][-2:] == ["voted", "settled"]
    assert history[-2]["reason"] == "over budget"


async def test_without_a_veto_it_is_rejected_once_approval_is_out_of_reach(
    make_handler: HandlerFactory,
) -> None:
    held = await hold(make_handler, veto=False)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, reject("too much"), by="alice")
    assert (await read(make_handler, held.pending_id)).status is PendingInputStatus.PENDING
    assert await desk.aresolve(held.pending_id, approve(), by="bob")
    assert await desk.aresolve(held.pending_id, reject("no"), by="carol")
    record = await read(make_handler, held.pending_id)
    assert record.status is PendingInputStatus.REJECTED
    assert record.reject_reason == "too much; no"


async def test_without_a_veto_two_approvals_still_win(make_handler: HandlerFactory) -> None:
    held = await hold(make_handler, veto=False)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, reject("too much"), by="alice")
    assert await desk.aresolve(held.pending_id, approve(), by="bob")
    assert await desk.aresolve(held.pending_id, approve(), by="carol")
    assert (await read(make_handler, held.pending_id)).status is PendingInputStatus.RESOLVED


async def test_an_edit_replaces_the_arguments_and_restarts_the_count(
    make_handler: HandlerFactory,
) -> None:
    held = await hold(make_handler)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert await desk.aresolve(held.pending_id, edit({"amount": 7}), by="bob")
    record = await read(make_handler, held.pending_id)
    edited = arguments_digest("transfer", {"amount": 7})
    assert record.status is PendingInputStatus.PENDING
    assert (record.arguments, record.arguments_digest) == ({"amount": 7}, edited)
    # Alice approved other arguments: she may vote again; bob's edit approves his own.
    assert record.approvers == ("alice", "carol")
    assert record.votes[1].edited == edited
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert await make_handler().wait(held.pending_id, timeout=5) == edit({"amount": 7})
    history = await desk.history(held.pending_id)
    assert history[2]["edited"] == edited
    assert history[2]["digest"] == arguments_digest("transfer", {"amount": 10})
    assert history[-1]["approvers"] == ["bob", "alice"]


async def test_a_vote_after_the_deadline_loses_to_it(make_handler: HandlerFactory) -> None:
    held = await hold(make_handler, timeout=0)
    assert not await make_handler().aresolve(held.pending_id, approve(), by="alice")
    record = await read(make_handler, held.pending_id)
    assert record.status is PendingInputStatus.TIMED_OUT
    assert record.votes == ()
    with pytest.raises(HumanInputTimeoutError):
        await make_handler().wait(held.pending_id, timeout=5)


async def test_the_synchronous_resolve_names_aresolve(make_handler: HandlerFactory) -> None:
    held = await hold(make_handler)
    with pytest.raises(AsyncSettleRequiredError, match="aresolve"):
        make_handler().resolve(held.pending_id, approve())
    with pytest.raises(AsyncSettleRequiredError, match=r"await handler\.a"):
        make_handler().reject(held.pending_id, "no")
    assert (await read(make_handler, held.pending_id)).votes == ()


async def test_a_quorum_beyond_its_approvers_is_refused(make_handler: HandlerFactory) -> None:
    with pytest.raises(ValueError, match="from 1 to the 3 approvers"):
        await hold(make_handler, quorum=4)


async def test_an_escalation_lists_more_approvers_who_vote_like_the_others(
    make_handler: HandlerFactory,
) -> None:
    held = await hold(make_handler)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert await desk.add_approvers(held.pending_id, ["dave", "alice"], by="ops")
    record = await read(make_handler, held.pending_id)
    assert record.voters == ("alice", "bob", "carol", "dave")
    assert record.approvers == ("bob", "carol", "dave"), "alice has voted already"
    assert await desk.aresolve(held.pending_id, edit({"amount": 5}), by="dave")
    record = await read(make_handler, held.pending_id)
    assert record.approvers == ("alice", "bob", "carol")
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    record = await read(make_handler, held.pending_id)
    assert (record.status, record.arguments) == (PendingInputStatus.RESOLVED, {"amount": 5})

"""Quorum approvals on every store: votes, refusals, vetoes, edits and expiry.

Each test holds a call for a quorum of the listed approvers and votes through the handler,
as the desk and the CLI do; on a durable store the votes come from a second handler with a
store object of its own, as from another process.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit import (
    ArgumentsChangedError,
    AsyncSettleRequiredError,
    InvalidAnswerError,
    VoteNeedsActorError,
)
from roomkit.core.exceptions import HumanInputRejectedError, HumanInputTimeoutError
from roomkit.models.pending_input import PendingInput, PendingInputStatus, arguments_digest
from roomkit.stores import approved_by
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


async def test_an_edit_back_counts_each_person_once(make_handler: HandlerFactory) -> None:
    """Alice's approval and her edit back to the same arguments are one person's: the
    quorum of two still waits for a second person."""
    held = await hold(make_handler)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert await desk.aresolve(held.pending_id, edit({"amount": 500}), by="bob")
    assert await desk.aresolve(held.pending_id, edit({"amount": 10}), by="alice")
    record = await read(make_handler, held.pending_id)
    assert record.status is PendingInputStatus.PENDING
    assert record.arguments == {"amount": 10}
    assert approved_by(record) == ["alice"]
    # Bob edited these arguments away: he has had his say on them; carol has not.
    assert record.approvers == ("carol",)
    assert not await desk.aresolve(held.pending_id, approve(), by="alice")
    assert (await read(make_handler, held.pending_id)).status is PendingInputStatus.PENDING
    assert await desk.aresolve(held.pending_id, approve(), by="carol")
    record = await read(make_handler, held.pending_id)
    assert record.status is PendingInputStatus.RESOLVED
    assert approved_by(record) == ["alice", "carol"]
    settled = (await desk.history(held.pending_id))[-1]
    assert (settled["type"], settled["approvers"]) == ("settled", ["alice", "carol"])


async def test_an_edit_back_by_another_person_makes_two(make_handler: HandlerFactory) -> None:
    """Two people who each approved exactly these arguments, by whatever path, are two."""
    held = await hold(make_handler)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert await desk.aresolve(held.pending_id, edit({"amount": 500}), by="bob")
    assert await desk.aresolve(held.pending_id, edit({"amount": 10}), by="carol")
    record = await read(make_handler, held.pending_id)
    assert (record.status, record.arguments) == (PendingInputStatus.RESOLVED, {"amount": 10})
    assert (await desk.history(held.pending_id))[-1]["approvers"] == ["alice", "carol"]


async def test_an_edit_that_leaves_approval_out_of_reach_rejects(
    make_handler: HandlerFactory,
) -> None:
    """Three of three, and bob edited the arguments alice edits back to: no third person
    may approve them, so the request is rejected instead of waiting for its deadline."""
    held = await hold(make_handler, quorum=3)
    desk = make_handler()
    assert await desk.aresolve(held.pending_id, approve(), by="alice")
    assert await desk.aresolve(held.pending_id, edit({"amount": 500}), by="bob")
    assert await desk.aresolve(held.pending_id, edit({"amount": 10}), by="alice")
    record = await read(make_handler, held.pending_id)
    assert (record.status, record.settled_by) == (PendingInputStatus.REJECTED, "alice")
    assert record.reject_reason is not None
    assert "out of reach" in record.reject_reason
    assert not await desk.aresolve(held.pending_id, approve(), by="carol")
    with pytest.raises(HumanInputRejectedError, match="out of reach"):
        await make_handler().wait(held.pending_id, timeout=5)


async def test_one_person_voting_twice_at_once_counts_once(make_handler: HandlerFactory) -> None:
    """The same approval from two processes at once: the store counts it once."""
    held = await hold(make_handler)
    first, second = make_handler(), make_handler()
    votes = await asyncio.gather(
        first.aresolve(held.pending_id, approve(), by="alice"),
        second.aresolve(held.pending_id, approve(), by="alice"),
    )
    assert sorted(votes) == [False, True]
    record = await read(make_handler, held.pending_id)
    assert record.status is PendingInputStatus.PENDING
    assert [vote.actor for vote in record.votes] == ["alice"]


async def test_a_vote_on_arguments_since_edited_is_refused(make_handler: HandlerFactory) -> None:
    """Alice was shown the first arguments; bob's edit changed them: her vote, naming the
    digest she was shown, is refused with the arguments as they are now."""
    held = await hold(make_handler)
    desk = make_handler()
    shown = held.arguments_digest
    assert await desk.aresolve(held.pending_id, edit({"amount": 5000}), by="bob", digest=shown)
    with pytest.raises(ArgumentsChangedError, match='"amount": 5000') as refused:
        await desk.aresolve(held.pending_id, approve(), by="alice", digest=shown)
    assert refused.value.request.arguments == {"amount": 5000}
    now = refused.value.request.arguments_digest
    assert now == arguments_digest("transfer", {"amount": 5000})
    with pytest.raises(ArgumentsChangedError):
        await desk.areject(held.pending_id, "no", by="carol", digest=shown)
    record = await read(make_handler, held.pending_id)
    assert [vote.actor for vote in record.votes] == ["bob"]
    assert [entry["type"] for entry in await desk.history(held.pending_id)] == [
        "created",
        "voted",
    ]
    # Shown the new arguments, she approves them.
    assert await desk.aresolve(held.pending_id, approve(), by="alice", digest=now)
    record = await read(make_handler, held.pending_id)
    assert (record.status, record.arguments) == (PendingInputStatus.RESOLVED, {"amount": 5000})


async def test_a_single_decision_names_the_digest_shown(make_handler: HandlerFactory) -> None:
    held = await make_handler().create_approval(
        "transfer", {"amount": 5}, approvers=["alice"], tool_schema=SCHEMA
    )
    desk = make_handler()
    other = arguments_digest("transfer", {"amount": 6})
    with pytest.raises(ArgumentsChangedError, match='"amount": 5'):
        await desk.aresolve(held.pending_id, approve(), by="alice", digest=other)
    with pytest.raises(ArgumentsChangedError):
        await desk.areject(held.pending_id, "no", by="alice", digest=other)
    with pytest.raises(ValueError, match="64 lowercase hex"):
        await desk.aresolve(held.pending_id, approve(), by="alice", digest="abc")
    with pytest.raises(TypeError, match="digest"):
        await desk.aresolve(held.pending_id, approve(), by="alice", digest=5)  # type: ignore[arg-type]
    assert (await read(make_handler, held.pending_id)).status is PendingInputStatus.PENDING
    assert await desk.aresolve(held.pending_id, approve(), by="alice", digest=held.arguments_digest)
    assert await make_handler().wait(held.pending_id, timeout=5) == approve()

"""A key names one call: a create whose key names a request made for another call is
refused, on every store, so that a decision on one call never stands for another."""

from __future__ import annotations

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import KeyConflictError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.approvals import approve, edit


async def test_an_approvals_key_re_attaches_only_for_the_arguments_it_was_made_for(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    first = await handler.create_approval(
        "delete_branch", {"name": "old-feature"}, approvers=["alice"], key="job-7"
    )
    await handler.aresolve(first.pending_id, approve(), by="alice")

    with pytest.raises(KeyConflictError, match="give this one a key of its own") as refused:
        await handler.create_approval(
            "delete_branch", {"name": "main"}, approvers=["alice"], key="job-7"
        )
    assert refused.value.request.pending_id == first.pending_id
    again = await handler.create_approval(
        "delete_branch", {"name": "old-feature"}, approvers=["alice"], key="job-7"
    )
    assert again.pending_id == first.pending_id
    assert again.status is PendingInputStatus.RESOLVED
    assert [r.pending_id for r in await handler.list_pending()] == []


async def test_an_edited_approval_re_attaches_for_the_call_it_was_made_for(
    make_handler: HandlerFactory,
) -> None:
    """An edit vote on a quorum approval changes its arguments: the call it was made for
    still re-attaches to it (so does one on the arguments it now holds), any other does not."""
    handler = make_handler()
    first = await handler.create_approval(
        "pay", {"amount": 100}, approvers=["alice", "bob"], quorum=2, key="pay-1"
    )
    await handler.aresolve(first.pending_id, edit({"amount": 90}), by="alice")
    edited = await handler.get_request(first.pending_id)
    assert edited is not None
    assert edited.arguments == {"amount": 90}

    again = await handler.create_approval(
        "pay", {"amount": 100}, approvers=["alice", "bob"], quorum=2, key="pay-1"
    )
    assert again.pending_id == first.pending_id
    with pytest.raises(KeyConflictError):
        await handler.create_approval(
            "pay", {"amount": 50}, approvers=["alice", "bob"], quorum=2, key="pay-1"
        )


async def test_a_questions_key_names_no_request_of_another_tool_or_kind(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    asked = await handler.create("AskUserQuestion", {"question": "Colour?"}, key="q")
    with pytest.raises(KeyConflictError):
        await handler.create("Confirm", {"question": "Colour?"}, key="q")
    with pytest.raises(KeyConflictError):
        await handler.create_approval("AskUserQuestion", {"question": "Colour?"}, key="q")
    with pytest.raises(KeyConflictError):
        await handler.create_detached("Confirm", {"question": "Colour?"}, key="q")
    # The same question, asked again (a re-run), re-attaches as before.
    assert (
        await handler.create("AskUserQuestion", {"question": "Colour?"}, key="q")
    ).pending_id == (asked.pending_id)
    assert [r.pending_id for r in await handler.list_pending()] == [asked.pending_id]

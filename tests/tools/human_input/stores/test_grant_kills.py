"""A process killed as it writes a standing grant's use, or the grant itself, on every
durable store.

The grant covers one call. A process holding the call writes its approval request with the
grant's use counted and its approval, in one write, and is killed while that write is on its
way (on Redis and PostgreSQL a relay holds its bytes until the kill; SQLite has no wire to
hold them on, so the file refuses the write and the process kills itself then): nothing is
written, and the turn re-driven after the restart is approved by the grant, its one use
spent then, nobody asked. A request a process left open between the insert that counted the
use and its settle (two writes, as a store that cannot insert a request settled takes) is
approved by the grant its history cites when the re-driven call re-attaches to it, though
that use was the grant's last.

A process making a grant while approving is killed while the approval's settle is on its
way, with the grant and its ``granted`` entry (written in the settle's own transaction on
SQLite and PostgreSQL, in the settle's script on Redis): the approval is left open with no
grant, and the approver's retry approves it and makes the grant, with one entry. On a
quorum approval the grant is made by the vote that reaches the quorum, in that vote's own
transaction (script): a process killed as it writes it leaves the last vote uncounted and
no grant, and the voter's retry makes both.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import Backend, SQLiteBackend
from tests.tools.human_input.stores.test_process_races import kinds
from tests.tools.human_input.stores.test_reassignment_kills import (
    killed_once_refused,
    killed_while_writing,
)

from roomkit import HumanInputHandler
from roomkit.models.pending_input import PendingInput, PendingInputStatus, arguments_digest
from roomkit.policy.grants import GrantScope, approve_and_grant
from roomkit.stores import check_trail, new_entry
from roomkit.stores.grants import Grant
from roomkit.tools.human_input._checks import owned_key
from roomkit.tools.human_input._granted import used_entry

pytestmark = pytest.mark.timeout(120)

PAY = {"to": "bob", "amount": 40}
CALL = {
    "op": "approval",
    "tool": "pay",
    "arguments": PAY,
    "approvers": ["ann"],
    "actor_id": "agent-7",
    "key": "r1:agent:call-1",
}
REFUSE_SETTLES = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
    """WHEN NEW.entry LIKE '%"decided"%' BEGIN SELECT RAISE(ABORT, 'refused'); END"""
)


async def one_use_granted(backend: Backend) -> None:
    """A grant of ann's covering one ``pay`` call of agent-7's with :data:`PAY`."""
    async with backend.make() as store:
        await store.grants.add(
            Grant(
                grant_id="g-pay",
                tool="pay",
                granted_by=("ann",),
                expires_at=time.time() + 3600,
                digest=arguments_digest("pay", PAY),
                actor_id="agent-7",
                max_uses=1,
            )
        )


async def approved_by_the_grant(store: Any, *, uses: int) -> None:
    """The call re-driven after a restart (its key re-attaching to whatever it made) is
    approved by the grant, nobody told, the grant used ``uses`` time(s) in all."""
    handler = HumanInputHandler(store=store)
    told: list[Any] = []

    async def tell(event: Any) -> bool:
        told.append(event)
        return True

    handler.on_input_required = tell
    again = await handler.create_approval(
        "pay", dict(PAY), approvers=["ann"], actor_id="agent-7", key=CALL["key"]
    )
    assert again.status is PendingInputStatus.RESOLVED
    assert again.settled_by == "grant:g-pay"
    assert handler.statistics().running_notifications == 0
    assert told == []
    assert kinds(await handler.history(again.pending_id)) == [
        "created",
        "grant_used",
        "decided",
        "settled",
    ]
    assert await handler.list_pending() == []
    used = await store.grants.get("g-pay")
    assert used is not None
    assert used.uses == uses


async def test_a_granted_call_whose_process_is_killed_as_it_writes_is_approved_after_restart(
    backend: Backend,
) -> None:
    """The kill leaves nothing: the use, the request and its approval are one write."""
    await one_use_granted(backend)
    if isinstance(backend, SQLiteBackend):
        await killed_once_refused(backend, CALL, REFUSE_SETTLES)
    else:
        await killed_while_writing(backend, CALL, b'"decided"')
    async with backend.make() as store:
        grant = await store.grants.get("g-pay")
        assert grant is not None
        assert (grant.uses, grant.live(time.time())) == (0, True)
        await approved_by_the_grant(store, uses=1)


async def test_a_granted_request_left_open_between_two_writes_is_approved_on_reattach(
    backend: Backend,
) -> None:
    """A request inserted with the grant's use and left open (as a process that settled
    it in a write of its own left it when stopped in between) is approved by the grant its
    history cites when its call re-attaches, though that use was the grant's last."""
    await one_use_granted(backend)
    digest = arguments_digest("pay", PAY)
    request = PendingInput(
        "left-open", "pay", dict(PAY), "", "", "", actor_id="agent-7", kind="approval",
        approvers=("ann",), arguments_digest=digest,
    )  # fmt: skip
    request.key = owned_key(request, CALL["key"])  # as a create keeps the call's key

    def history(grant: Grant) -> tuple[dict[str, Any], ...]:
        created = new_entry("created", tool="pay", digest=digest, arguments=dict(PAY))
        return (created, used_entry(grant))

    async with backend.make() as store:
        inserted = await store.insert_granted(request, "g-pay", history=history)
        assert inserted is not None
        assert inserted.record.status is PendingInputStatus.PENDING
        await approved_by_the_grant(store, uses=1)


REFUSE_GRANTED = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
    """WHEN NEW.entry LIKE '%"granted"%' BEGIN SELECT RAISE(ABORT, 'refused'); END"""
)
REFUSE_GRANTS = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_grants "
    "BEGIN SELECT RAISE(ABORT, 'refused'); END"
)
SCOPE = {"expires_in": 3600, "max_uses": 3}


async def killed_writing_the_grant(backend: Backend, plan: dict[str, Any]) -> None:
    """Run ``plan`` in a process of its own, killed as the grant is on its way (on SQLite,
    once the file refuses it)."""
    if isinstance(backend, SQLiteBackend):
        await killed_once_refused(backend, plan, REFUSE_GRANTS)
    elif backend.kind == "redis":
        await killed_while_writing(backend, plan, b":grants:item:")
    else:
        await killed_while_writing(backend, plan, b"roomkit_grants")


async def held_for_ann(backend: Backend) -> str:
    """An approval of agent-7's ``pay`` call held for ann, on a store whose grants table is
    made already (by a grant on another tool): its id."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        other = Grant(grant_id="g-other", tool="refund", granted_by=("ann",), expires_at=1e10)
        await store.grants.add(other)
        request = await handler.create_approval(
            "pay", dict(PAY), approvers=["ann"], actor_id="agent-7"
        )
    return request.pending_id


async def left_open_then_granted_once(backend: Backend, pending_id: str) -> None:
    """After the restart the approval is still open and no grant was made: ann approving
    again (the desk's retry) approves it and makes the grant, with one ``granted`` entry."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.get_request(pending_id)
        assert request is not None
        assert request.status is PendingInputStatus.PENDING
        assert [grant.grant_id for grant in await store.grants.list()] == ["g-other"]
        assert kinds(await handler.history(pending_id)) == ["created"]
        scope = GrantScope.from_json(SCOPE)
        accepted, grant = await approve_and_grant(handler, pending_id, scope, by="ann")
        assert accepted
        assert grant is not None
        assert await store.grants.get(grant.grant_id) == grant
        history = await handler.history(pending_id)
        assert kinds(history) == ["created", "decided", "settled", "granted"]
        assert (history[-1]["grant"], history[-1]["granted_by"]) == (grant.grant_id, ["ann"])
        again = await approve_and_grant(handler, pending_id, scope, by="ann")
        assert again == (True, grant)
        assert kinds(await handler.history(pending_id)).count("granted") == 1


async def test_a_grant_whose_process_is_killed_as_it_writes_its_entry_leaves_nothing(
    backend: Backend,
) -> None:
    """The ``granted`` entry is written with the approval's settle: a process killed while
    that write is on its way leaves the approval open, with no grant and no entry."""
    pending_id = await held_for_ann(backend)
    plan = {"op": "grant", "id": pending_id, "scope": SCOPE, "by": "ann"}
    if isinstance(backend, SQLiteBackend):
        await killed_once_refused(backend, plan, REFUSE_GRANTED)
    else:
        await killed_while_writing(backend, plan, b'"granted"')
    await left_open_then_granted_once(backend, pending_id)


async def test_an_approval_whose_process_is_killed_as_it_writes_the_grant_stays_open(
    backend: Backend,
) -> None:
    """The grant is written in the approval's own transaction: a process killed while the
    grant is on its way never leaves the approval settled without its grant."""
    pending_id = await held_for_ann(backend)
    plan = {"op": "grant", "id": pending_id, "scope": SCOPE, "by": "ann"}
    await killed_writing_the_grant(backend, plan)
    await left_open_then_granted_once(backend, pending_id)


async def held_for_ann_and_bob(backend: Backend) -> str:
    """A quorum approval of agent-7's ``pay`` call needing ann and bob, ann's vote offering
    the grant of :data:`SCOPE` counted already, on a store whose grants table is made: its
    id."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        other = Grant(grant_id="g-other", tool="refund", granted_by=("ann",), expires_at=1e10)
        await store.grants.add(other)
        request = await handler.create_approval(
            "pay", dict(PAY), approvers=["ann", "bob"], actor_id="agent-7", quorum=2
        )
        scope = GrantScope.from_json(SCOPE)
        assert await approve_and_grant(handler, request.pending_id, scope, by="ann") == (
            True,
            None,
        )
    return request.pending_id


async def quorum_left_open_then_granted_once(backend: Backend, pending_id: str) -> None:
    """After the restart the approval is still open on ann's vote alone, with no grant and
    no offer of bob's: bob voting again (the desk's retry) approves it and makes the grant
    of both, with one ``granted`` entry and one offer of each."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.get_request(pending_id)
        assert request is not None
        assert request.status is PendingInputStatus.PENDING
        assert [vote.actor for vote in request.votes] == ["ann"]
        assert [grant.grant_id for grant in await store.grants.list()] == ["g-other"]
        opened = ["created", "grant_offered", "voted"]
        assert kinds(await handler.history(pending_id)) == opened
        scope = GrantScope.from_json(SCOPE)
        accepted, grant = await approve_and_grant(handler, pending_id, scope, by="bob")
        assert accepted
        assert grant is not None
        assert grant.granted_by == ("ann", "bob")
        assert await store.grants.get(grant.grant_id) == grant
        history = await handler.history(pending_id)
        assert kinds(history) == [*opened, "grant_offered", "voted", "settled", "granted"]
        assert (history[-1]["grant"], history[-1]["granted_by"]) == (grant.grant_id, ["ann", "bob"])


async def test_a_quorum_approval_whose_last_voter_is_killed_as_the_grant_is_written_stays_open(
    backend: Backend,
) -> None:
    """The vote that reaches the quorum writes the grant in its own transaction: a process
    killed while the grant is on its way never leaves the approval approved without it."""
    pending_id = await held_for_ann_and_bob(backend)
    plan = {"op": "grant", "id": pending_id, "scope": SCOPE, "by": "bob"}
    await killed_writing_the_grant(backend, plan)
    await quorum_left_open_then_granted_once(backend, pending_id)


REFUSE_VOTES = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
    """WHEN NEW.entry LIKE '%"voted"%' BEGIN SELECT RAISE(ABORT, 'refused'); END"""
)


async def test_a_quorum_voter_killed_as_the_vote_is_written_offers_the_grant_once(
    backend: Backend,
) -> None:
    """A vote's offer is written in the vote's own transaction (script): a process killed
    while the vote is on its way leaves neither, and the voter's retry offers once."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create_approval(
            "pay", dict(PAY), approvers=["ann", "bob"], actor_id="agent-7", quorum=2
        )
    pending_id = request.pending_id
    plan = {"op": "grant", "id": pending_id, "scope": SCOPE, "by": "ann"}
    if isinstance(backend, SQLiteBackend):
        await killed_once_refused(backend, plan, REFUSE_VOTES)
    else:
        await killed_while_writing(backend, plan, b'"voted"')
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        assert kinds(await handler.history(pending_id)) == ["created"]
        scope = GrantScope.from_json(SCOPE)
        assert await approve_and_grant(handler, pending_id, scope, by="ann") == (True, None)
        made = await approve_and_grant(handler, pending_id, scope, by="bob")
        assert made.grant is not None
        assert made.grant.granted_by == ("ann", "bob")
        history = await handler.history(pending_id)
        offered, voted = ["created", "grant_offered", "voted"], ["grant_offered", "voted"]
        assert kinds(history) == [*offered, *voted, "settled", "granted"]
        assert (history[1]["actor"], history[3]["actor"]) == ("ann", "bob")
        audit = handler.audit_trail
        assert audit is not None
        assert not check_trail(await audit.read(), None, now=time.time()).problems


async def test_a_vote_that_does_not_reach_the_quorum_writes_no_grant(backend: Backend) -> None:
    """The first vote offering a grant is counted alone: no grant, no ``granted`` entry."""
    pending_id = await held_for_ann_and_bob(backend)
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        assert [grant.grant_id for grant in await store.grants.list()] == ["g-other"]
        history = await handler.history(pending_id)
        assert kinds(history) == ["created", "grant_offered", "voted"]

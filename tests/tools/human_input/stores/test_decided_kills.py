"""A process killed as it records a call nobody is asked about, on every durable store.

A call a policy settles as it is made, or a standing grant covers, is recorded as an
approval request settled by the policy or the grant. Without a key (a voice or conference
call, the external tool door) no turn is ever re-driven to settle a request its process left
open, so the request must be stored settled in the write that creates it: a process killed
as that write is on its way (on Redis and PostgreSQL a relay holds the bytes of the write
carrying the ``decided`` entry until the kill; SQLite has no wire to hold them on, so the
file refuses that entry and the process kills itself then) leaves nothing open, and no use
of the grant spent without the request it settles.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import Backend, Store
from tests.tools.human_input.stores.test_grant_kills import PAY, one_use_granted
from tests.tools.human_input.stores.test_process_races import kinds, verified
from tests.tools.human_input.stores.test_reassignment_kills import killed_as_it_writes

from roomkit import HumanInputHandler
from roomkit.models.history import PolicyDecided
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import create_decided

pytestmark = pytest.mark.timeout(120)

POLICY = "policy:payments"
DECIDED = {"op": "decided", "tool": "pay", "arguments": PAY, "by": POLICY, "actor_id": "agent-7"}
GRANTED = {
    "op": "approval",
    "tool": "pay",
    "arguments": PAY,
    "approvers": ["ann"],
    "actor_id": "agent-7",
}
REFUSE_DECISIONS = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
    """WHEN NEW.entry LIKE '%"decided"%' BEGIN SELECT RAISE(ABORT, 'refused'); END"""
)


async def killed_deciding(backend: Backend, plan: dict[str, Any]) -> None:
    """Run ``plan`` in a process of its own, killed as the write carrying its ``decided``
    entry is on its way."""
    await killed_as_it_writes(backend, plan, REFUSE_DECISIONS, b'"decided"')


async def nothing_open(handler: HumanInputHandler) -> None:
    """The store holds no open request: none waits for an answer that never comes."""
    assert await handler.list_pending() == []


async def approved(
    store: Store, handler: HumanInputHandler, request: PendingInput, by: str, cited: str
) -> None:
    """``request`` was stored approved by ``by``, its history whole (its ``created`` entry,
    the entry ``cited`` of whatever decided, ``decided``, ``settled``) and verified, and
    nothing is left open."""
    assert request.status is PendingInputStatus.RESOLVED
    assert request.settled_by == by
    assert kinds(await handler.history(request.pending_id)) == [
        "created",
        cited,
        "decided",
        "settled",
    ]
    await nothing_open(handler)
    await verified(store, request.pending_id)


async def test_a_policy_decided_call_whose_process_is_killed_leaves_nothing_open(
    backend: Backend,
) -> None:
    await killed_deciding(backend, DECIDED)
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        await nothing_open(handler)
        # The call made again is recorded settled, its history whole and verified.
        request = await create_decided(
            handler,
            "pay",
            dict(PAY),
            approve(),
            by=POLICY,
            surface="policy",
            history=[PolicyDecided(actor=POLICY, decision="allow", automatic=True)],
            actor_id="agent-7",
        )
        await approved(store, handler, request, POLICY, "policy_decided")


async def test_a_granted_call_without_a_key_whose_process_is_killed_spends_no_use(
    backend: Backend,
) -> None:
    await one_use_granted(backend)
    await killed_deciding(backend, GRANTED)
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        await nothing_open(handler)
        grant = await store.grants.get("g-pay")
        assert grant is not None
        assert (grant.uses, grant.live(time.time())) == (0, True)
        # The grant's one use is still there for the call made again.
        request = await handler.create_approval(
            "pay", dict(PAY), approvers=["ann"], actor_id="agent-7"
        )
        await approved(store, handler, request, "grant:g-pay", "grant_used")

"""A process killed between two writes of a standing grant, on every durable store.

A process killed between the write that spends a grant's use on a call and the call's
settle: the call re-attaching after a restart is approved by the grant, on every durable
store, and nobody is asked.

The grant covers one call. A process holding the call inserts its approval request with
the grant's use counted (one write), and is killed while its settle is on its way (on
Redis and PostgreSQL a relay holds the settle's bytes until the kill; SQLite has no wire to
hold them on, so the file refuses the settle and the process kills itself then). The
grant is used up by that use; the turn re-driven after the restart re-attaches to the
request by its key, and must find it approved by the grant, not held for a person.

A process making a grant while approving is killed after the grant is stored, before the
``granted`` entry of the approval's history: the approver's retry writes the entry, once.
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
from roomkit.models.pending_input import PendingInputStatus, arguments_digest
from roomkit.policy.grants import GrantScope, approve_and_grant
from roomkit.stores.grants import Grant

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


async def test_a_granted_call_whose_process_is_killed_before_its_settle_is_approved_after_restart(
    backend: Backend,
) -> None:
    await one_use_granted(backend)
    if isinstance(backend, SQLiteBackend):
        await killed_once_refused(backend, CALL, REFUSE_SETTLES)
    else:
        await killed_while_writing(backend, CALL, b"decided")
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        told: list[Any] = []

        async def tell(event: Any) -> bool:
            told.append(event)
            return True

        handler.on_input_required = tell
        # What the kill left: the use spent, by the request citing it, still open.
        grant = await store.grants.get("g-pay")
        assert grant is not None
        assert (grant.uses, grant.live(time.time())) == (1, False)
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
        used = await store.grants.get("g-pay")
        assert used is not None
        assert used.uses == 1


REFUSE_GRANTED = (
    "CREATE TRIGGER refuse BEFORE INSERT ON roomkit_history "
    """WHEN NEW.entry LIKE '%"granted"%' BEGIN SELECT RAISE(ABORT, 'refused'); END"""
)
SCOPE = {"expires_in": 3600, "max_uses": 3}


async def test_a_grant_whose_process_is_killed_before_its_entry_gets_it_on_the_retry(
    backend: Backend,
) -> None:
    """The grant is made, and its process killed before the ``granted`` entry that says who
    granted what: ann approving again (the desk's retry) writes the entry, once."""
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create_approval(
            "pay", dict(PAY), approvers=["ann"], actor_id="agent-7"
        )
    plan = {"op": "grant", "id": request.pending_id, "scope": SCOPE, "by": "ann"}
    if isinstance(backend, SQLiteBackend):
        await killed_once_refused(backend, plan, REFUSE_GRANTED)
    else:
        await killed_while_writing(backend, plan, b'"granted"')
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        [grant] = await store.grants.list()
        assert kinds(await handler.history(request.pending_id)) == [
            "created",
            "decided",
            "settled",
        ]
        accepted, again = await approve_and_grant(
            handler, request.pending_id, GrantScope.from_json(SCOPE), by="ann"
        )
        assert accepted
        assert again == grant
        history = await handler.history(request.pending_id)
        assert kinds(history) == ["created", "decided", "settled", "granted"]
        assert (history[-1]["grant"], history[-1]["granted_by"]) == (grant.grant_id, ["ann"])
        await approve_and_grant(handler, request.pending_id, GrantScope.from_json(SCOPE), by="ann")
        assert kinds(await handler.history(request.pending_id)).count("granted") == 1

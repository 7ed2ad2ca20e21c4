"""A call a standing grant covers: its approval recorded with the use it takes, then settled.

Every use of a grant is recorded by the request it settles, whose ``grant_used`` entry cites
the grant and the use. The use is counted in the write that inserts that request: on a
durable store that keeps the grants (:class:`~roomkit.stores.grants.InsertsGranted`: SQLite
and PostgreSQL in one transaction, Redis in one script), and on the memory store in one
step of the event loop. The same write reads the call's key first: a create whose key names
a request made already (a retry, a turn re-driven after a restart) gets that request, and no
use is spent on it. A request that was inserted with its use but not settled (its process
stopped in between) is settled by the grant it cites when its call re-attaches to it, before
anyone is told of it: its use was counted while the grant was live, so it is settled so even
once the grant is used up (that use may have been its last), expired or revoked since.

On a store that inserts a request settled (:class:`~roomkit.stores.base.InsertsSettled`:
every durable store of roomkit's), the request is inserted approved, its ``decided`` and
``settled`` entries with the rest of its history, in the write that counts the use: a process
stopped there leaves the use, the request and its approval together or none of them, with or
without a key to re-attach by. Elsewhere (the memory store, grants kept apart from the
requests) the settle is a write of its own, after the insert: the decision and the outcome
join the request's history in the settle's transaction, as any decision's do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import new_entry
from roomkit.stores.grants import (
    Grant,
    GrantedInsert,
    GrantStore,
    InsertsGranted,
    MemoryGrants,
)
from roomkit.tools.human_input._decisions import APPROVED, Decisions, opening_entries, trail
from roomkit.tools.human_input._in_transaction import Settlement
from roomkit.tools.human_input._keys import made_for, reattached
from roomkit.tools.human_input._memory_engine import MemoryEngine

__all__ = ["GRANT", "settle_cited", "settle_granted"]

GRANT = "grant"
"""The surface of a decision a standing grant made (``settled_by`` is ``grant:<id>``)."""

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED


async def settle_granted(
    decisions: Decisions,
    grants: GrantStore,
    request: PendingInput,
    timeout: float | None,
    covering: Sequence[Grant],
    *,
    surface: str | None,
    about: str | None,
) -> PendingInput | None:
    """The approval ``request`` settled by the first of the ``covering`` grants still live
    at its use, or the request its key names; ``None`` when none of them covers anything
    now (nothing was written: a person is asked)."""
    quorum, voters = request.quorum, request.voters
    # The grant stands for the approvals the call needs: no vote is left to cast.
    request.quorum, request.voters = None, ()
    opening = opening_entries(request, surface, about)
    for grant in covering:
        inserted = await _insert(decisions, grants, request, timeout, grant.grant_id, opening)
        if inserted is None:
            continue  # revoked, expired or used up meanwhile
        if inserted.created:
            assert inserted.grant is not None
            if inserted.record.status is not _PENDING:
                return inserted.record  # settled in its insert
            return await _settle(decisions, inserted.record, inserted.grant.grant_id)
        request.quorum, request.voters = quorum, voters
        return await _reattached(decisions, request, inserted.record, timeout, surface, about)
    request.quorum, request.voters = quorum, voters
    return None


def used_entry(grant: Grant) -> dict[str, Any]:
    """The ``grant_used`` entry of the request ``grant`` settles, its use counted."""
    return new_entry(
        "grant_used",
        surface=GRANT,
        grant=grant.grant_id,
        use=grant.uses,
        max_uses=grant.max_uses,
        expires_at=grant.expires_at,
        granted_by=list(grant.granted_by),
        quorum=grant.quorum,
        source=grant.source,
    )


async def _insert(
    decisions: Decisions,
    grants: GrantStore,
    request: PendingInput,
    timeout: float | None,
    grant_id: str,
    opening: tuple[dict[str, Any], ...],
) -> GrantedInsert | None:
    """Store ``request`` with one use of the grant ``grant_id``, or find the request its key
    names (no use spent); ``None`` when the grant covers nothing now."""

    def history(grant: Grant) -> tuple[dict[str, Any], ...]:
        return (*opening, used_entry(grant))

    engine = decisions.engine
    if isinstance(engine, MemoryEngine):
        found = None if request.key is None else engine.store.by_key(request.key)
        if found is not None:
            return GrantedInsert(found, False, None)
        # The handler's own grants count the use without a step of the loop: the use and
        # the request it settles are added in one step.
        if isinstance(grants, MemoryGrants):
            used = grants.use_now(grant_id)
        else:
            used = await grants.use(grant_id)
        if used is None:
            return None
        record = engine.add(request, timeout, history(used), announce=False)
        return GrantedInsert(record, record.pending_id == request.pending_id, used)
    store = engine.store
    if isinstance(store, InsertsGranted) and grants is store.grants:
        if not engine.inserts_settled:
            return await engine.create_granted(request, timeout, grant_id, history)
        # The use, the request and its approval in one write.
        settlement = _approval(request, grant_id)

        def whole(grant: Grant) -> tuple[dict[str, Any], ...]:
            return (*history(grant), *settlement.history)

        return await engine.create_granted(settlement.made(request), timeout, grant_id, whole)
    # Grants kept apart from the requests (an application's own) cannot share their write:
    # the use is counted first, and the request citing it inserted after.
    used = await grants.use(grant_id)
    if used is None:
        return None
    record = await engine.create(request, timeout, history(used), announce=False)
    return GrantedInsert(record, record.pending_id == request.pending_id, used)


def _approval(record: PendingInput, grant_id: str) -> Settlement:
    """The approval of ``record`` by the grant ``grant_id``: its outcome, its ``decided``
    and ``settled`` entries."""
    decided = new_entry(
        "decided", surface=GRANT, decision="approve", digest=record.arguments_digest
    )
    return Settlement(
        record.pending_id,
        _RESOLVED,
        APPROVED,
        f"{GRANT}:{grant_id}",
        (decided, *trail(_RESOLVED, None, GRANT)),
    )


async def _settle(decisions: Decisions, record: PendingInput, grant_id: str) -> PendingInput:
    """Settle the stored approval ``record`` approved by the grant ``grant_id``."""
    engine = decisions.engine
    await engine.settle(_approval(record, grant_id))
    return await engine.get_request(record.pending_id) or record


async def _reattached(
    decisions: Decisions,
    request: PendingInput,
    found: PendingInput,
    timeout: float | None,
    surface: str | None,
    about: str | None,
) -> PendingInput:
    """``found``, the request ``request``'s key names, as a create re-attaching to it gets
    it: settled by the grant its history cites when its process stopped before settling it;
    held for a person (and announced, if that is still owed) when no grant settles it."""
    found = await reattached(request, found, decisions.history)
    settled = await settle_cited(decisions, request)(found)
    if settled.status is not _PENDING:
        return settled
    return await decisions.hold(request, timeout, surface=surface, about=about)


def settle_cited(
    decisions: Decisions, request: PendingInput
) -> Callable[[PendingInput], Awaitable[PendingInput]]:
    """What brings the open approval that ``request``'s key re-attaches to up to date: one
    whose history cites a grant's use is settled by that grant (its process stopped after
    the insert that counted the use, before its settle); any other is left as it is."""

    async def settled(found: PendingInput) -> PendingInput:
        if found.status is not _PENDING or not await made_for(
            found, request.kind, request.tool_name, request.arguments_digest, decisions.history
        ):
            return found  # a key naming another call is refused once the create returns
        cited = [
            entry
            for entry in await decisions.history(found.pending_id)
            if entry.get("type") == "grant_used"
        ]
        if not cited:
            return found
        # Its use was counted with its insert: the settle its process did not make is made now.
        return await _settle(decisions, found, str(cited[-1]["grant"]))

    return settled

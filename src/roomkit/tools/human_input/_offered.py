"""A grant offered with a decision: the settle of the approval carries it.

Inside :func:`granted_with`, the approval ``pending_id`` approved by the call inside (as
:func:`~roomkit.policy.grants.approve_and_grant` approves it) is settled with the grant's
``granted`` entry in the settle's own history: on every store the entry is written in the
settle's transaction, or not at all. On a store that records grants in a settle
(:class:`~roomkit.stores.grants.SettlesGranting`: every durable store of roomkit's) whose
grants are the ones offered to, the grant itself is written there too, so that a process
stopped anywhere leaves the approval with its grant, or neither. Elsewhere (an application's
own store or grants) the grant is added right after the settle, and a retry of the approval
adds it if the process stopped in between.

Inside :func:`granted_by_quorum`, a vote approving the quorum approval ``pending_id`` offers
the grant its maker makes: its ``grant_offered`` entry is written with the vote, in the
vote's own transaction (script, step) on every store, and only when the vote counts, so a
process stopped before the vote leaves no offer and the vote run again offers once. On a
store that records grants in a settle, the vote that approves the request makes the grant
there too, with its ``granted`` entry (:class:`~roomkit.stores.grants.VoteGrant`); a vote
that does not approve it makes none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, NamedTuple

from roomkit.core.context_vars import bound
from roomkit.models.history import Entry
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores import MakesGrant, VoteGrant, check_entry
from roomkit.stores.grants import Grant, GrantStore, SettlesGranting
from roomkit.tools.human_input._in_transaction import Settlement

__all__ = ["granted_by_quorum", "granted_with", "vote_grant", "vote_offer", "with_grant"]


class _Offered(NamedTuple):
    pending_id: str
    grant: Grant
    entry: dict[str, Any]
    grants: GrantStore


class _OfferedToQuorum(NamedTuple):
    pending_id: str
    make: MakesGrant
    grants: GrantStore
    entry: dict[str, Any] | None


_OFFERED: ContextVar[_Offered | None] = ContextVar("roomkit_offered_grant", default=None)
_OFFERED_TO_QUORUM: ContextVar[_OfferedToQuorum | None] = ContextVar(
    "roomkit_grant_offered_to_quorum", default=None
)


@contextmanager
def granted_with(
    pending_id: str, grant: Grant, entry: dict[str, Any] | Entry, grants: GrantStore
) -> Iterator[None]:
    """An approval of ``pending_id`` settled inside makes ``grant`` (of ``grants``): its
    settle writes ``entry`` (the ``granted`` entry) and, on a store that can, the grant.

    Raises:
        TypeError, ValueError: ``entry`` is no history entry.
    """
    with bound(_OFFERED, _Offered(pending_id, grant, check_entry(entry), grants)):
        yield


def with_grant(settlement: Settlement, store: object) -> Settlement:
    """``settlement``, an approval's settle on ``store``, carrying the grant offered with
    it (unchanged when none is, or it settles another request, or refuses it)."""
    offered = _OFFERED.get()
    if (
        offered is None
        or offered.pending_id != settlement.pending_id
        or settlement.status is not PendingInputStatus.RESOLVED
    ):
        return settlement
    return replace(
        settlement,
        history=(*settlement.history, offered.entry),
        grant=offered.grant if _settles_into(store, offered.grants) else None,
    )


@contextmanager
def granted_by_quorum(
    pending_id: str,
    make: MakesGrant,
    grants: GrantStore,
    *,
    offered: dict[str, Any] | Entry | None = None,
) -> Iterator[None]:
    """A vote approving the quorum approval ``pending_id`` inside offers the grant ``make``
    makes (of ``grants``): the vote writes ``offered`` (its voter's ``grant_offered``
    entry) with it, when it counts; on a store that can, the vote that approves the request
    makes the grant and its ``granted`` entry in its own transaction.

    Raises:
        TypeError, ValueError: ``offered`` is no history entry.
    """
    entry = None if offered is None else check_entry(offered)
    with bound(_OFFERED_TO_QUORUM, _OfferedToQuorum(pending_id, make, grants, entry)):
        yield


def vote_grant(pending_id: str, store: object) -> VoteGrant | None:
    """The grant an approving vote on ``pending_id`` offers to ``store``: ``None`` when none
    is offered, or ``store`` does not record the grants offered in a settle."""
    offered = _OFFERED_TO_QUORUM.get()
    if (
        offered is None
        or offered.pending_id != pending_id
        or not _settles_into(store, offered.grants)
    ):
        return None
    return VoteGrant(offered.grants, offered.make)


def vote_offer(pending_id: str) -> dict[str, Any] | None:
    """The ``grant_offered`` entry an approving vote on ``pending_id`` writes with it, or
    ``None`` when it offers none."""
    offered = _OFFERED_TO_QUORUM.get()
    if offered is None or offered.pending_id != pending_id or offered.entry is None:
        return None
    return dict(offered.entry)


def _settles_into(store: object, grants: GrantStore) -> bool:
    """Whether ``store`` records in its settles the grants of ``grants`` (its own)."""
    return isinstance(store, SettlesGranting) and store.grants is grants

"""The rules of a quorum approval, as one pure function every store applies to its record.

A vote (:class:`Ballot`) is judged against the record as the store read it inside its own
transaction or script (:func:`judge`): it counts only while the request is pending and its
deadline has not passed (on the store's clock), from a listed approver who has not voted on
the current arguments yet, and, when the ballot names the digest its voter was shown, only
while the arguments still have that digest. The :class:`Judgement` says what the store
writes in the same operation: the votes, the approvers still to vote, the replacement
arguments of an edit, the history entries (the ``grant_offered`` of a vote offering a
grant, ``voted``, and ``settled`` when this vote decides), and the outcome when the vote
reaches the quorum, vetoes it, or leaves approval out of reach. Every store writes exactly
what the judgement says, so the rules are written once, here.

The count is of people, per digest: the quorum is met when that many distinct approvers
approved the arguments as they stand (by an approval, or by the edit that led to them). An
edit replaces the arguments and restarts the count on their digest: the editor's vote
approves the new arguments, and those who approved the old ones may vote again. Arguments
edited back to ones approved before keep those approvals, each person's once: whatever path
led to the arguments, a quorum of N is N people who approved exactly them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from roomkit.models.decisions import Approve, Edit
from roomkit.models.json_limits import check_approver_count
from roomkit.models.pending_input import PendingInput, PendingInputStatus, Vote
from roomkit.stores._history import deadline_entry
from roomkit.stores.grants import Grant, GrantStore

__all__ = [
    "Ballot",
    "Judgement",
    "MakesGrant",
    "VoteGrant",
    "approved_by",
    "declined",
    "decode_votes",
    "encode_votes",
    "judge",
    "offered_grant",
    "settled_text",
    "widened",
]

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED
_TIMED_OUT = PendingInputStatus.TIMED_OUT

MakesGrant = Callable[[PendingInput, Sequence[dict[str, Any]]], tuple[Grant, dict[str, Any]] | None]
"""Makes the grant a vote offers on a quorum approval, from the approval as the vote
approves it and its history as the vote leaves it (read in the vote's transaction, followed
by the vote's own entries): the grant and its ``granted`` entry, or ``None`` when the votes
that approved it make none."""


class VoteGrant(NamedTuple):
    """A grant offered with a vote on a quorum approval (:attr:`Ballot.grant`): the vote
    that approves the request makes it, in its own transaction (on Redis, its script) with
    its ``granted`` entry, on a store that records grants in a settle
    (:class:`~roomkit.stores.grants.SettlesGranting`); a vote that does not approve it makes
    none."""

    grants: GrantStore
    """The store's grants (:attr:`~roomkit.stores.grants.KeepsGrants.grants`), which
    record it."""
    make: MakesGrant
    """Makes it, once the vote approves the request."""


@dataclass(frozen=True, slots=True)
class Ballot:
    """One vote as the handler checked it, before a store judges it."""

    actor: str
    """Who votes."""
    decision: str
    """``"approve"``, ``"edit"`` or ``"reject"``."""
    token: str
    """This vote call's token: run again after a fault, it finds itself counted."""
    arguments: dict[str, Any] | None = None
    """An edit's replacement arguments (already checked against the tool's schema)."""
    edited: str | None = None
    """Their digest."""
    reason: str = ""
    """A rejection's reason."""
    surface: str | None = None
    """Where the vote came from, for the history."""
    shown: str | None = None
    """The digest of the arguments the voter was shown, or ``None`` (the application's own
    vote, trusted): the vote counts only while the arguments still have this digest."""
    stands: tuple[tuple[str, str | None], ...] = ()
    """Whom the voter may vote for, in order, with the delegation each goes through
    (``None``: as themself or a group's member), as the handler's routing found; empty
    without routing: the voter votes as themself."""
    grant: VoteGrant | None = None
    """The grant this vote offers: a store that records grants in a settle makes it with
    the vote, when the vote approves the request (:func:`offered_grant`)."""
    offer: dict[str, Any] | None = None
    """The ``grant_offered`` entry of the grant this vote offers, written just before its
    ``voted`` entry, in the same operation: only a vote that counts writes it, so an offer
    never stands without its vote, and a vote run again after a fault offers once."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """What one vote comes to, and what the store writes for it."""

    accepted: bool
    """Whether the vote counts (or counted already: the same call run again)."""
    record: PendingInput | None = None
    """The record as it stands after the vote (``None`` when the id is unknown)."""
    write: bool = False
    """Whether the store has anything to write (votes, arguments, outcome, history)."""
    entries: tuple[dict[str, Any], ...] = field(default=())
    """The history entries to append in the same operation, oldest first."""
    stale: bool = False
    """The vote was refused because the arguments changed since its voter was shown them;
    :attr:`record` holds them as they are now."""

    @property
    def settles(self) -> bool:
        """Whether this vote (or the deadline it met) settles the request."""
        return self.write and self.record is not None and self.record.status is not _PENDING


def offered_grant(judgement: Judgement, ballot: Ballot) -> VoteGrant | None:
    """The grant ``ballot`` offers, when ``judgement`` approves the request: the store makes
    it (reading the history it is made from) in the vote's own transaction; ``None`` when
    none is offered or the vote does not approve it."""
    record = judgement.record
    if ballot.grant is None or not judgement.write or record is None:
        return None
    return ballot.grant if record.status is _RESOLVED else None


def _approvals(votes: tuple[Vote, ...], digest: str | None) -> list[str]:
    """Who approved ``digest``, each approver of record once, in the order of their first
    approval of it: an approval and a later edit back to the same arguments are one
    person's, and a delegate's approval counts for the one approver it was cast for."""
    if digest is None:
        return []
    counted: dict[str, None] = {}
    voters: set[str] = set()
    for vote in votes:
        if vote.approves == digest and vote.actor not in voters:
            voters.add(vote.actor)
            counted.setdefault(vote.principal, None)
    return list(counted)


def _voted_on(votes: tuple[Vote, ...], digest: str | None) -> set[str]:
    """Everyone who voted on ``digest``, and everyone a vote on it was cast for."""
    return {
        name
        for vote in votes
        if vote.digest == digest or vote.approves == digest
        for name in (vote.actor, vote.principal)
    }


def _may_vote(record: PendingInput, ballot: Ballot) -> bool:
    """Whether ``ballot``'s voter is an approver of record, or stands in for one."""
    if not ballot.stands:
        return ballot.actor in record.voters
    return any(principal in record.voters for principal, _ in ballot.stands)


def _counts_for(record: PendingInput, ballot: Ballot, done: set[str]) -> tuple[str, str | None]:
    """The approver of record ``ballot`` counts for and the delegation it goes through;
    ``("", None)`` when it counts for nobody. The voter's own place comes first; a voter
    standing in for several approvers casts one vote, for the first still to vote."""
    if ballot.actor in done:
        return "", None
    if not ballot.stands:
        return (ballot.actor, None) if ballot.actor in record.voters else ("", None)
    for principal, delegation in ballot.stands:
        if principal in record.voters and principal not in done:
            return principal, delegation
    return "", None


def approved_by(record: PendingInput) -> list[str]:
    """Who approved the record's current arguments, in the order they voted."""
    return _approvals(record.votes, record.arguments_digest)


def widened(
    approvers: tuple[str, ...], voters: tuple[str, ...], quorum: int | None, actors: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The approvers and the voters of an open request once an escalation adds ``actors``.

    On a quorum approval they join the listed approvers, and may vote like them (an actor
    listed already keeps the vote they cast); on any other request they join the approvers.

    Raises:
        ValueError: the request would list more than
            :data:`~roomkit.models.json_limits.MAX_APPROVERS` approvers; the store
            writes nothing.
    """
    if quorum is None:
        grown = tuple(dict.fromkeys((*approvers, *actors)))
        _check_grown(grown, approvers)
        return grown, voters
    added = tuple(actor for actor in dict.fromkeys(actors) if actor not in voters)
    grown = tuple(dict.fromkeys((*approvers, *added)))
    _check_grown(grown, approvers)  # the voters are among them
    return grown, (*voters, *added)


def _check_grown(grown: tuple[str, ...], before: tuple[str, ...]) -> None:
    """Refuse an escalation that takes a list past its bound (one stored longer stays)."""
    if len(grown) > len(before):
        check_approver_count(len(grown), "actors", listed=len(before))


def declined(record: PendingInput) -> list[tuple[str, str]]:
    """Who rejected the record's current arguments, and why, in the order they voted."""
    digest = record.arguments_digest
    return [
        (vote.actor, vote.reason or "")
        for vote in record.votes
        if vote.decision == "reject" and vote.digest == digest
    ]


def settled_text(record: PendingInput) -> str:
    """The result a quorum approval settles with: the decision the tool loop runs.

    ``approve()`` when the arguments are the ones held, else ``edit(<the arguments>)``, so
    that the wait's answer alone says which arguments run."""
    if any(vote.decision == "edit" for vote in record.votes):
        return Edit(record.arguments)
    return Approve()


def judge(
    record: PendingInput | None, ballot: Ballot, now: float | None, at: datetime
) -> Judgement:
    """What ``ballot`` comes to against ``record``, read in the store's transaction.

    Args:
        record: the record as stored, or ``None`` when the id is unknown.
        ballot: the vote.
        now: the store's clock reading that judges the deadline (``None``: no deadline
            check, the memory store's timer records it).
        at: when the vote is recorded, for the vote and its history entries.

    A vote that meets a passed deadline settles the request ``TIMED_OUT`` (and is refused):
    the vote and the deadline never both win.
    """
    if record is None:
        return Judgement(False)
    votes = record.votes
    if record.status is not _PENDING or record.quorum is None:
        replay = any(vote.token == ballot.token for vote in votes) and bool(ballot.token)
        return Judgement(replay, record)
    if ballot.token and any(vote.token == ballot.token for vote in votes):
        return Judgement(True, record)
    if now is not None and record.deadline is not None and now >= record.deadline:
        expired = _copy(record, status=_TIMED_OUT, result=None, reject_reason=None)
        return Judgement(False, expired, write=True, entries=(deadline_entry(),))
    digest = record.arguments_digest
    if not _may_vote(record, ballot):
        return Judgement(False, record)
    if ballot.shown is not None and ballot.shown != digest:
        return Judgement(False, record, stale=True)
    principal, delegation = _counts_for(record, ballot, _voted_on(votes, digest))
    if not principal:
        return Judgement(False, record)
    on_behalf_of = principal if principal != ballot.actor else None
    vote = Vote(
        ballot.actor,
        ballot.decision,
        at,
        digest or "",
        ballot.edited,
        ballot.reason if ballot.decision == "reject" else None,
        ballot.token,
        on_behalf_of,
    )
    votes = (*votes, vote)
    changes: dict[str, Any] = {"votes": votes}
    behalf = _behalf_fields(on_behalf_of, delegation)
    counted = (
        *(() if ballot.offer is None else (ballot.offer,)),
        _entry(
            "voted",
            ballot,
            at,
            decision=ballot.decision,
            digest=digest,
            **_vote_fields(ballot),
            **behalf,
        ),
    )
    if ballot.decision == "edit":
        digest = ballot.edited
        changes["arguments"] = dict(ballot.arguments or {})
        changes["arguments_digest"] = digest
    done = _voted_on(votes, digest)
    changes["approvers"] = tuple(actor for actor in record.voters if actor not in done)
    approvals = _approvals(votes, digest)
    after = _copy(record, **changes)
    outcome = _outcome(after, ballot, approvals)
    if outcome is None:
        return Judgement(True, after, write=True, entries=counted)
    status, text = outcome
    if status is _RESOLVED:
        settled = _copy(after, status=status, result=settled_text(after), settled_by=ballot.actor)
    else:
        settled = _copy(after, status=status, reject_reason=text, settled_by=ballot.actor)
    fields: dict[str, Any] = {"status": status.value, "digest": digest, "approvers": approvals}
    if status is _REJECTED:
        fields["reason"] = text
    entry = _entry("settled", ballot, at, **fields)
    return Judgement(True, settled, write=True, entries=(*counted, entry))


def _outcome(
    record: PendingInput, ballot: Ballot, approvals: list[str]
) -> tuple[PendingInputStatus, str] | None:
    """The outcome ``ballot`` brings about, or ``None`` while the vote goes on."""
    required = record.quorum or 1
    if len(approvals) >= required:
        return _RESOLVED, ""
    if ballot.decision == "reject" and record.veto:
        return _REJECTED, ballot.reason
    # Rejected once those still to vote cannot make up the count: after a rejection without
    # a veto, or after an edit to arguments too few of those left may approve (whoever voted
    # on them before, or edited them away, does not vote on them again).
    possible = len(approvals) + len(record.approvers)
    if possible >= required:
        return None
    reasons = "; ".join(reason for _, reason in declined(record) if reason)
    return _REJECTED, reasons or _out_of_reach(required, possible)


def _out_of_reach(required: int, possible: int) -> str:
    """Why a quorum approval is rejected when no one gave a reason."""
    return (
        f"approval is out of reach: these arguments need {required} approvals and at most "
        f"{possible} of the approvers may still give theirs"
    )


def _behalf_fields(on_behalf_of: str | None, delegation: str | None) -> dict[str, Any]:
    """A vote cast for someone else names them, and the delegation, in its entry; a vote
    cast as oneself adds nothing, so its entry reads as it always did."""
    if on_behalf_of is None:
        return {}
    fields: dict[str, Any] = {"on_behalf_of": on_behalf_of}
    if delegation is not None:
        fields["delegation_id"] = delegation
    return fields


def _vote_fields(ballot: Ballot) -> dict[str, Any]:
    if ballot.decision == "edit":
        return {"edited": ballot.edited, "arguments": ballot.arguments}
    if ballot.decision == "reject":
        return {"reason": ballot.reason}
    return {}


def _entry(kind: str, ballot: Ballot, at: datetime, **fields: Any) -> dict[str, Any]:
    stamp = at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return {"type": kind, "at": stamp, "actor": ballot.actor, "surface": ballot.surface, **fields}


def _copy(record: PendingInput, **changes: Any) -> PendingInput:
    """``record`` with ``changes``, as a new object (a store never mutates one it handed out)."""
    values = {name: getattr(record, name) for name in _PUBLIC}
    values.update(changes)
    return PendingInput(**values)


_PUBLIC = tuple(name for name in PendingInput.__dataclass_fields__ if not name.startswith("_"))


def encode_votes(votes: tuple[Vote, ...]) -> str:
    """The votes as the stores keep them: JSON text, one object a vote."""
    if not votes:
        return "[]"
    return json.dumps(
        [
            {
                "actor": vote.actor,
                "decision": vote.decision,
                "at": vote.at.isoformat(),
                "digest": vote.digest,
                "edited": vote.edited,
                "reason": vote.reason,
                "token": vote.token,
                # Only a vote cast for someone else has the key: older votes read the same.
                **({"for": vote.on_behalf_of} if vote.on_behalf_of else {}),
            }
            for vote in votes
        ],
        separators=(",", ":"),
        ensure_ascii=False,
    )


def decode_votes(text: object) -> tuple[Vote, ...]:
    """The votes :func:`encode_votes` wrote (none for a missing field).

    Raises:
        TypeError, ValueError: the text is not such a list.
    """
    if text is None or text in ("", "\x00", "[]"):
        return ()
    if not isinstance(text, str):
        raise TypeError(f"expected text, got {type(text).__name__}")
    items = json.loads(text)
    if not isinstance(items, list):
        raise TypeError("not a JSON list of votes")
    return tuple(
        Vote(
            str(item["actor"]),
            str(item["decision"]),
            datetime.fromisoformat(item["at"]),
            str(item["digest"]),
            item.get("edited"),
            item.get("reason"),
            str(item.get("token") or ""),
            item.get("for"),
        )
        for item in items
    )

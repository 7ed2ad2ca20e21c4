"""The SQLite store's votes, inside the write transaction the store opened.

The transaction reads the record under the file's write lock, judges the vote
(:func:`~roomkit.stores._quorum.judge`: pending, before its deadline on the store's clock,
a listed approver who has not voted on these arguments), writes it, settles the request
when it decides it and appends the history entries
(:func:`~roomkit.stores.sqlite._history.append_chained`): all or nothing. A vote that
approves the request records the grant it offers there too, with its ``granted`` entry
(:func:`~roomkit.stores._quorum.offered_grant`). A vote that meets a passed deadline records
the timeout instead. Racing votes take turns on the file's write lock.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores._history import read_entry, stored_seq
from roomkit.stores._quorum import Ballot, Judgement, VoteGrant, judge, offered_grant
from roomkit.stores._records import encode
from roomkit.stores._trail import Anchoring
from roomkit.stores.base import PendingChangeKind
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._feed import ChangeLog, next_seq
from roomkit.stores.sqlite._grants import SQLiteGrants
from roomkit.stores.sqlite._history import append_chained
from roomkit.stores.sqlite._link import query

__all__ = ["TIMEOUT_OUTCOME", "cast"]

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT

TIMEOUT_OUTCOME = (_TIMED_OUT.value, None, None, 0, None, None)
"""What a settle that lost to the deadline records: status, result, reason, withdrawn, by,
and no settle token (no call won)."""


def cast(
    db: sqlite3.Connection,
    pending_id: str,
    ballot: Ballot,
    now: float,
    changes: ChangeLog,
    anchoring: Anchoring,
) -> Judgement:
    """Judge and record ``ballot`` in the write transaction open on ``db``.

    Args:
        db: the connection, in the store's write transaction.
        pending_id: the request voted on.
        ballot: the vote, checked by the handler.
        now: the store's clock reading the transaction judges by.
        changes: the store's change log, which stages the change for the feed.
        anchoring: signs the head of the request's history chain.

    Returns:
        What the vote comes to; its record is the row as written when it was written.
    """
    found = query(db, sql.SELECT_FOR_SETTLE, (pending_id,))
    current = sql.decode_row(found[0]) if found else None
    judgement = judge(current, ballot, now, datetime.fromtimestamp(now, UTC))
    after = judgement.record
    if not judgement.write or after is None:
        return judgement
    seq = next_seq(db)
    if after.status is _TIMED_OUT:
        query(db, sql.SETTLE, (*TIMEOUT_OUTCOME, now, now, seq, pending_id))
        append_chained(db, pending_id, judgement.entries, now, anchoring)
        changes.stage(PendingChangeKind.SETTLED, pending_id, seq)
        return judgement
    fields = encode(after)
    voted = [fields[name] for name in ("votes", "approvers", "arguments")]
    rows = query(db, sql.RECORD_VOTE, (*voted, after.arguments_digest, now, seq, pending_id))
    kind = PendingChangeKind.VOTED
    entries = judgement.entries
    if after.status is not _PENDING:
        outcome = (after.result, after.reject_reason, 0, after.settled_by, ballot.token)
        rows = query(db, sql.SETTLE, (after.status.value, *outcome, now, now, seq, pending_id))
        kind = PendingChangeKind.SETTLED
        offer = offered_grant(judgement, ballot)
        if offer is not None:
            entries = (*entries, *_granted(db, offer, judgement, now))
    changes.stage(kind, pending_id, seq)
    append_chained(db, pending_id, entries, now, anchoring)
    return Judgement(True, sql.decode_row(rows[0]), True, entries)


def _granted(
    db: sqlite3.Connection, offer: VoteGrant, judgement: Judgement, now: float
) -> tuple[dict[str, Any], ...]:
    """Record the grant ``offer`` makes on the request ``judgement`` approves in the
    transaction open on ``db``; its ``granted`` entry, or none when it makes none."""
    grants = offer.grants
    approved = judgement.record
    if not isinstance(grants, SQLiteGrants) or approved is None:
        return ()  # another store's grants: the caller adds the grant after the vote
    pending_id = approved.pending_id
    rows = query(db, sql.READ_HISTORY, (pending_id,))
    try:
        history = [
            read_entry(text, stored_seq(at, pending_id), pending_id=pending_id) for at, text in rows
        ]
    except CorruptRecordError:
        return ()  # the caller reads the history after the vote, and reports what it finds
    made = offer.make(approved, [*history, *judgement.entries])
    if made is None:
        return ()
    grant, entry = made
    grants.add_in(db, grant, now)
    return (entry,)

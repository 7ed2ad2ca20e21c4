"""The Postgres store's votes and history appends, inside a transaction the store opened.

A vote locks the request's row (``SELECT ... FOR UPDATE``), reads the server's time in the
same statement (or the store's clock, when it has one), judges the vote
(:func:`~roomkit.stores._quorum.judge`), writes it, settles the request
when it decides (the store's own settle statement, judged at the same time) and appends the
history entries (:func:`~roomkit.stores.postgres._history.append_chained`,
or the settle's own history when the vote settles): one transaction. A vote that approves
the request records the grant it offers there too, with its ``granted`` entry
(:func:`~roomkit.stores._quorum.offered_grant`). Racing votes take turns on the row lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome
from roomkit.stores._history import read_entry
from roomkit.stores._quorum import Ballot, Judgement, VoteGrant, judge, offered_grant
from roomkit.stores._records import encode
from roomkit.stores.base import PendingChangeKind
from roomkit.stores.grants import Grant
from roomkit.stores.postgres._feed import hint
from roomkit.stores.postgres._grants import PostgresGrants
from roomkit.stores.postgres._history import append_chained
from roomkit.stores.postgres._schema import Statements, decode_row, read_back, stored

__all__ = ["Settle", "cast"]

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT

Settle = Callable[
    [AsyncConnection[Any], PendingInputStatus, Outcome, float], Awaitable[PendingInput | None]
]
"""Settles the request on the connection with a status and an outcome (whose history it
appends when it wins), judged at the given time; the record when it won."""


async def cast(
    db: AsyncConnection[Any],
    sql: Statements,
    pending_id: str,
    ballot: Ballot,
    judged_at: float | None,
    settle: Settle,
) -> Judgement:
    """Judge and record ``ballot`` in the transaction open on ``db``."""
    cursor = await db.execute(sql.select_for_vote, (judged_at, pending_id))
    row = await cursor.fetchone()
    if row is None:
        return Judgement(False)
    now = float(row[-1])
    judgement = judge(decode_row(row), ballot, now, datetime.fromtimestamp(now, UTC))
    after = judgement.record
    if not judgement.write or after is None:
        return judgement
    if after.status is _TIMED_OUT:
        await settle(db, _TIMED_OUT, Outcome(None, None, False, None, judgement.entries), now)
        return judgement
    fields = encode(after)
    written = [stored(str(fields[name])) for name in ("votes", "approvers", "arguments")]
    voted = (sql.channel, hint(PendingChangeKind.VOTED, pending_id))
    cursor = await db.execute(
        sql.record_vote, (*written, stored(after.arguments_digest), now, pending_id, *voted)
    )
    row = await cursor.fetchone()
    assert row is not None  # the row is locked by this transaction
    record: PendingInput | None = decode_row(row)
    entries = judgement.entries
    if after.status is not _PENDING:
        offer = offered_grant(judgement, ballot)
        made = None if offer is None else await _made(db, sql, offer, judgement)
        if made is not None:
            entries = (*entries, made[2])
        outcome = Outcome(after.result, after.reject_reason, False, after.settled_by, entries)
        record = await settle(db, after.status, outcome, now)
        if record is not None and made is not None:
            await made[0].add_in(db, made[1])
    else:
        await append_chained(db, sql, {pending_id: entries}, now)
    return Judgement(record is not None, record, True, entries)


async def _made(
    db: AsyncConnection[Any], sql: Statements, offer: VoteGrant, judgement: Judgement
) -> tuple[PostgresGrants, Grant, dict[str, Any]] | None:
    """The grant ``offer`` makes on the request ``judgement`` approves, from its history as
    read in the transaction open on ``db`` and the vote's entries, with the grants that
    record it and its ``granted`` entry; ``None`` when it makes none here."""
    grants = offer.grants
    approved = judgement.record
    if not isinstance(grants, PostgresGrants) or approved is None:
        return None  # another store's grants: the caller adds the grant after the vote
    pending_id = approved.pending_id
    cursor = await db.execute(sql.read_history, (pending_id,))
    try:
        history = [
            read_entry(str(read_back(line)), int(seq), pending_id=pending_id)
            for seq, line in await cursor.fetchall()
        ]
    except CorruptRecordError:
        return None  # the caller reads the history after the vote, and reports what it finds
    made = offer.make(approved, [*history, *judgement.entries])
    return None if made is None else (grants, *made)

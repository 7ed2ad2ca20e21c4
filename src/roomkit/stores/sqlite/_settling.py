"""The SQLite store's settle: one check-and-set in the store's write transaction.

Under the file's write lock, the transaction judges the request's status and deadline on the
store's clock and writes the outcome with its settle token and its history entries, all or
nothing; the record the write hands back is the one the update returns. A settle that finds
the request pending and its deadline not passed does both in one statement, whose conditions
are the checks; any other reads the status and deadline first. A settle whose deadline came
first records the timeout instead, and loses. A record that turns
out not to be this library's fails the settle with
:class:`~roomkit.core.exceptions.CorruptRecordError` and is left as it was: read whole before
the write when its status or deadline already says so, and rolled back with the write when
only the update's record does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome
from roomkit.stores._history import deadline_entry
from roomkit.stores.base import PendingChangeKind
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._batch import Undo
from roomkit.stores.sqlite._feed import next_seq
from roomkit.stores.sqlite._history import append_chained
from roomkit.stores.sqlite._link import query
from roomkit.stores.sqlite._part import ChainPart
from roomkit.stores.sqlite._votes import TIMEOUT_OUTCOME

__all__ = ["Also", "Settling"]

Also = Callable[[sqlite3.Connection, float], object]
"""A write that goes with a winning settle, in its transaction, at its ``now``."""

_PENDING = PendingInputStatus.PENDING
_PENDING_TEXT = _PENDING.value
_TIMED_OUT = PendingInputStatus.TIMED_OUT


@dataclass(slots=True, eq=False)
class Settling(ChainPart):
    """The settle of one store, on its connection."""

    async def settle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        token: str,
        outcome: Outcome,
        also: Also | None = None,
    ) -> PendingInput | None:
        """One attempt: the record when this settle won (or had won, by its token).
        ``also`` writes what goes with the outcome (its grant) when this settle wins."""
        stored_outcome = (
            status.value,
            outcome.result,
            outcome.reason,
            int(outcome.withdrawn),
            outcome.settled_by,
            token,
        )
        history = outcome.history

        def write(db: sqlite3.Connection, now: float) -> PendingInput | None:
            if status is not _TIMED_OUT:
                # The common case in one statement: pending, and its deadline not passed.
                in_time = (*stored_outcome, now, now, pending_id, now)
                settled = query(db, sql.SETTLE_IN_TIME, in_time)
                if settled:
                    if also is not None:
                        also(db, now)
                    return self._written(db, pending_id, settled[0], next_seq(db), history, now)
            state = query(db, sql.SELECT_STATE, (pending_id,))
            if not state:
                return None
            stored_status, deadline = state[0]
            if stored_status != _PENDING_TEXT or not (deadline is None or type(deadline) is float):
                # Settled already, or a record to read whole: decoded before anything is
                # written, so that a corrupt record stays as it is.
                found = query(db, sql.SELECT_FOR_SETTLE, (pending_id,))
                current = sql.decode_row(found[0])
                if current.status is not _PENDING:
                    # Its own token: this settle, run again after a fault hid its commit, won.
                    return current if found[0][-1] == token else None
                deadline = current.deadline
            passed = deadline is not None and now >= deadline
            if status is _TIMED_OUT and not passed:
                return None
            wins = status is _TIMED_OUT or not passed
            # When the deadline came first, the store records the timeout and this call loses.
            stored = stored_outcome if wins else TIMEOUT_OUTCOME
            seq = next_seq(db)
            settled = query(db, sql.SETTLE, (*stored, now, now, seq, pending_id))
            if wins:
                if also is not None:
                    also(db, now)
                return self._written(db, pending_id, settled[0], seq, history, now)
            late = (deadline_entry(),) if history else ()
            self._written(db, pending_id, settled[0], seq, late, now)
            return None

        record: PendingInput | None = await self.write(write)
        return record

    def _written(
        self,
        db: sqlite3.Connection,
        pending_id: str,
        row: Sequence[Any],
        seq: int,
        history: Sequence[Mapping[str, Any]],
        now: float,
    ) -> PendingInput:
        """Append the settle's history entries and stage its change; the record as written."""
        if history:
            append_chained(db, pending_id, history, now, self.trail.anchoring)
        try:
            record = sql.decode_row(row)
        except CorruptRecordError as error:
            # A pending record read by its status and deadline alone: one that is not
            # this library's goes back to what it was, and this settle fails alone.
            raise Undo(error) from None
        # The record rides with the change: this process's waiters need no read.
        self.changes.stage(PendingChangeKind.SETTLED, pending_id, seq, record)
        return record

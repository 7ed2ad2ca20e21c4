"""The SQLite store's settle: one check-and-set in the store's write transaction.

The transaction reads the request under the file's write lock, judges its deadline on the
store's clock and writes the outcome with its settle token and its history entries, all or
nothing. A settle whose deadline came first records the timeout instead, and loses.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome
from roomkit.stores._history import deadline_entry
from roomkit.stores.base import PendingChangeKind
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._feed import next_seq
from roomkit.stores.sqlite._history import append_chained
from roomkit.stores.sqlite._link import query
from roomkit.stores.sqlite._part import ChainPart
from roomkit.stores.sqlite._votes import TIMEOUT_OUTCOME

__all__ = ["Settling"]

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT


@dataclass(slots=True, eq=False)
class Settling(ChainPart):
    """The settle of one store, on its connection."""

    async def settle(
        self, pending_id: str, status: PendingInputStatus, token: str, outcome: Outcome
    ) -> PendingInput | None:
        """One attempt: the record when this settle won (or had won, by its token)."""
        stored_outcome = (
            status.value,
            outcome.result,
            outcome.reason,
            int(outcome.withdrawn),
            outcome.settled_by,
            token,
        )

        def write(db: sqlite3.Connection, now: float) -> PendingInput | None:
            found = query(db, sql.SELECT_FOR_SETTLE, (pending_id,))
            # Decoded before anything is written: a corrupt record stays as it is.
            current = sql.decode_row(found[0]) if found else None
            if current is None:
                return None
            if current.status is not _PENDING:
                # Its own token: this settle, run again after a fault hid its commit, won.
                return current if found[0][-1] == token else None
            passed = current.deadline is not None and now >= current.deadline
            if status is _TIMED_OUT and not passed:
                return None
            wins = status is _TIMED_OUT or not passed
            # When the deadline came first, the store records the timeout and this call loses.
            stored = stored_outcome if wins else TIMEOUT_OUTCOME
            seq = next_seq(db)
            settled = query(db, sql.SETTLE, (*stored, now, now, seq, pending_id))
            if outcome.history:
                chained = outcome.history if wins else (deadline_entry(),)
                append_chained(db, pending_id, chained, now, self.trail.anchoring)
            record = sql.decode_row(settled[0])
            # The record rides with the change: this process's waiters need no read.
            self.changes.stage(PendingChangeKind.SETTLED, pending_id, seq, record)
            return record if wins else None

        record: PendingInput | None = await self.write(write)
        return record

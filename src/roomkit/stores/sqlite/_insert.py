"""The SQLite store's insert: a request's row and the start of its history, in one write.

Under the file's write lock, a request with a key first reads the key's holder: one still
within its retention is handed back and nothing is written; one past it makes the store's
purge run in this write, which frees the key. The row and its ``created`` entry
(:func:`~roomkit.stores.sqlite._history.append_chained`) then go in together, the change
staged in the store's change log. Only an id stored already is said to be a duplicate: any
other constraint the file holds refuses the row as SQLite says it.

A request settled as it is made goes in with its outcome (its ``settled_at`` the write's
time) and its whole history, and owes no announcement; the change staged for it tells this
store's listeners of its creation, then of its settle.

An ungranted insert looks first for a live standing grant on the request's tool, in the same
write, and writes nothing when there is one. A granted insert counts the grant's use in the
same write, after the key is read: a key's holder is returned with no use spent, and an
insert that fails takes the use back with it (:class:`~roomkit.stores.sqlite._batch.Undo`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from roomkit.core.exceptions import StoreError
from roomkit.models.pending_input import PendingInput
from roomkit.stores._checks import check_history, check_insertable
from roomkit.stores._records import FIELDS, decode, encode
from roomkit.stores.base import PendingChangeKind
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._batch import Undo
from roomkit.stores.sqlite._feed import next_seq
from roomkit.stores.sqlite._grants import SQLiteGrants
from roomkit.stores.sqlite._history import append_chained
from roomkit.stores.sqlite._link import query
from roomkit.stores.sqlite._part import ChainPart

__all__ = ["GrantUse", "Inserting"]

GrantUse = Callable[[sqlite3.Connection, float], Sequence[dict[str, Any]] | None]
"""Counts a grant's use inside the write, at its ``now``: the history the request starts
with, or ``None`` when the grant covers nothing now (raising ``Undo`` takes the use back)."""


@dataclass(slots=True, eq=False)
class Inserting(ChainPart):
    """The insert of one store, on its connection."""

    grants: SQLiteGrants
    """The standing grants beside the requests, which an ungranted insert looks at."""
    retained: Callable[[Any, float], bool]
    """Whether a key's holder settled at a time (its row's last column) is still retained at
    a reading of the clock."""
    purge_due: Callable[[sqlite3.Connection, float], None]
    """Runs the store's purge inside a write, at its ``now``, when one is due."""
    purge_next: Callable[[], None]
    """Makes the store's purge due at once: a key's holder is past its retention."""

    async def insert(
        self,
        request: PendingInput,
        history: Sequence[dict[str, Any]],
        *,
        ungranted: bool,
        granted: GrantUse | None = None,
        settled: bool = False,
    ) -> tuple[PendingInput, bool] | None:
        """``(record, True)`` when the request was created, ``(the key's retained holder,
        False)`` when there is one; ``None`` when a grant was looked for (``ungranted``) and
        one is live, or when ``granted`` covers nothing now (then nothing is written).
        ``settled``: the request is settled as it is made (resolved or rejected), and
        ``history`` is all of its history.

        Raises:
            ValueError, TypeError, InvalidTextError, StoreError: as
                :meth:`~roomkit.stores.sqlite.SQLiteStore.insert` says.
        """
        check_insertable(request, settled=settled)
        entries = check_history(history)
        fields = encode(request)
        values = [fields[name] for name in FIELDS]
        tool = request.tool_name

        def write(db: sqlite3.Connection, now: float) -> tuple[PendingInput, bool] | None:
            if ungranted and self.grants.live_on(db, tool, now):
                return None
            if request.key is not None:
                for row in query(db, sql.SELECT_BY_KEY, (request.key,)):
                    if self.retained(row[-1], now):
                        return sql.decode_row(row), False
                    # The key's holder is past its retention: it goes, the key is free.
                    self.purge_next()
            chain = entries if granted is None else granted(db, now)
            if chain is None:
                return None  # the grant covers nothing now: nothing was written
            self.purge_due(db, now)
            try:
                seq = next_seq(db)
                if settled:
                    db.execute(sql.INSERT_SETTLED, (*values, now, now, seq))
                else:
                    db.execute(sql.INSERT, (*values, now, seq))
            except sqlite3.IntegrityError as error:
                # Only an id stored already is a duplicate: any other constraint the file
                # holds (a NOT NULL, a CHECK, a trigger's) is said as SQLite says it.
                refused = StoreError(
                    f"pending request {request.pending_id!r} is already stored"
                    if query(db, sql.SELECT_STATE, (request.pending_id,))
                    else f"pending request {request.pending_id!r} could not be stored, the "
                    f"database refused it: {error}; nothing was written"
                )
                # A use counted already goes back with the rest of this write.
                raise (refused if granted is None else Undo(refused)) from None
            append_chained(db, request.pending_id, chain, now, self.trail.anchoring)
            self.changes.stage(PendingChangeKind.CREATED, request.pending_id, seq)
            record = decode(fields)
            if settled:
                self.changes.stage(PendingChangeKind.SETTLED, request.pending_id, seq, record)
            return record, True

        inserted: tuple[PendingInput, bool] | None = await self.write(write)
        return inserted

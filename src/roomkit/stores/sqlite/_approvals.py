"""The SQLite store's approvals part: approvers, votes and the requests' history chains.

Each write runs in the store's ``BEGIN IMMEDIATE`` transaction, which holds the file's write
lock: a vote is judged, recorded and (when it decides) settled with its history entries, all
or nothing, and an append reads the chain's head with no other process appending between (an
append at a given seq reads the request's status too, and writes only while both stand, with
the outbox rows it owes people: the outbox's table is in the same file).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._approvals import ApprovalsPart
from roomkit.stores._history import read_entry, stored_seq
from roomkit.stores._quorum import Ballot, Judgement, widened
from roomkit.stores._records import names_text, read_names
from roomkit.stores.outbox import OutboxItem
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._batch import Undo
from roomkit.stores.sqlite._history import append_chained
from roomkit.stores.sqlite._link import fetch_all, query
from roomkit.stores.sqlite._outbox import add_items
from roomkit.stores.sqlite._part import ChainPart
from roomkit.stores.sqlite._votes import cast

__all__ = ["Approvals"]

_PENDING = PendingInputStatus.PENDING


@dataclass(slots=True, eq=False)
class Approvals(ChainPart, ApprovalsPart):
    """Approvers, votes and history on one store's connection."""

    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any] | None = None
    ) -> PendingInput | None:
        """Add ``actors`` to the pending request's approvers, and append ``entry`` to its
        history in the same transaction; ``None`` when not pending."""

        def write(db: sqlite3.Connection, now: float) -> PendingInput | None:
            found = query(db, sql.SELECT_APPROVERS, (pending_id,))
            if not found or found[0][0] != _PENDING:
                return None
            _, approvers, voters, quorum = found[0]
            approvers, voters = widened(read_names(approvers), read_names(voters), quorum, actors)
            written = (names_text(approvers), names_text(voters), pending_id)
            rows = query(db, sql.SET_APPROVERS, written)
            if entry is not None:
                append_chained(db, pending_id, (entry,), now, self.trail.anchoring)
            return sql.decode_row(rows[0])

        record: PendingInput | None = await self.write(write)
        return record

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """Judge and record ``ballot`` in one write transaction (one attempt)."""

        def write(db: sqlite3.Connection, now: float) -> Judgement:
            return cast(db, pending_id, ballot, now, self.changes, self.trail.anchoring)

        judgement: Judgement = await self.write(write)
        return judgement

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` to the request's chain, under the file's write lock; its ``seq``."""

        def write(db: sqlite3.Connection, now: float) -> int:
            return append_chained(db, pending_id, (entry,), now, self.trail.anchoring)[0]

        return int(await self.write(write))

    async def append_history_at(
        self, pending_id: str, entry: dict[str, Any], seq: int, notices: Sequence[OutboxItem]
    ) -> bool:
        """Append ``entry`` as entry ``seq`` of the pending request's chain, and add
        ``notices`` to the outbox's table, under the file's write lock in one transaction;
        ``False``, with neither written, when the request is not pending or the chain is
        not ``seq`` long."""

        def write(db: sqlite3.Connection, now: float) -> bool:
            found = query(db, sql.SELECT_APPROVERS, (pending_id,))
            if not found or found[0][0] != _PENDING:
                return False
            if _length(db, pending_id) != seq:
                return False
            append_chained(db, pending_id, (entry,), now, self.trail.anchoring)
            add_items(db, notices)
            return True

        return bool(await self.write(write))

    async def append_history_after(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` as entry ``seq`` of the request's chain, open or settled, under
        the file's write lock; ``False``, with nothing written, when the chain is not ``seq``
        long."""

        def write(db: sqlite3.Connection, now: float) -> bool:
            if _length(db, pending_id) != seq:
                return False
            append_chained(db, pending_id, (entry,), now, self.trail.anchoring)
            return True

        return bool(await self.write(write))

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first.

        Raises:
            CorruptRecordError: an entry, or its ``seq``, is not one roomkit wrote.
        """
        async with self.session() as db:
            rows = await fetch_all(db, sql.READ_HISTORY, (pending_id,))
        return [
            read_entry(text, stored_seq(seq, pending_id), pending_id=pending_id)
            for seq, text in rows
        ]


def _length(db: sqlite3.Connection, pending_id: str) -> int:
    """How many entries the request's chain holds, read inside the write's transaction.

    Raises:
        Undo: an entry's ``seq`` is no whole number (the write is undone, its caller told).
    """
    head = query(db, sql.HISTORY_HEAD, (pending_id,))
    try:
        return stored_seq(head[0][0], pending_id) + 1 if head else 0
    except CorruptRecordError as error:
        raise Undo(error) from None

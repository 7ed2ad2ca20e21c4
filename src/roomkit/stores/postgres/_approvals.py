"""The PostgreSQL store's approvals part: approvers, votes and the requests' history chains.

A vote runs in one transaction that holds the request's row lock (:mod:`._votes`), settling
the request through :class:`~._settling.Settling` when it decides it; an append is a
check-and-set on the chain's head (:mod:`._history`); an append at a given seq adds the
outbox rows it owes people in its transaction (the outbox's table is in the same schema).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import Rollback

from roomkit.models.pending_input import PendingInput
from roomkit.stores._approvals import ApprovalsPart
from roomkit.stores._checks import Outcome
from roomkit.stores._history import read_entry
from roomkit.stores._quorum import Ballot, Judgement, widened
from roomkit.stores._records import names_text, read_names
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.stores.outbox import OutboxItem
from roomkit.stores.postgres._history import append_at, append_chained
from roomkit.stores.postgres._outbox import add_items
from roomkit.stores.postgres._part import WritingPart
from roomkit.stores.postgres._schema import decode_row, read_back
from roomkit.stores.postgres._settling import Settling
from roomkit.stores.postgres._text import as_recorded, check_nul
from roomkit.stores.postgres._votes import cast

__all__ = ["Approvals"]


@dataclass(slots=True, eq=False)
class Approvals(WritingPart, ApprovalsPart):
    """Approvers, votes and history on one store's pool."""

    settling: Settling
    """The store's settles, which a deciding vote runs in its transaction."""

    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any] | None = None
    ) -> PendingInput | None:
        """Add ``actors`` to the pending request's approvers, and append ``entry`` to its
        history in the same transaction (which holds the row's lock, as a vote's does);
        ``None`` when not pending."""
        # The actors are written as JSON, which spells a NUL ``\u0000``: any id is kept.
        if "\x00" in pending_id:
            return None
        await self.ready()
        async with self.link.connection() as db, db.transaction():
            cursor = await db.execute(self.sql.select_approvers, (pending_id,))
            row = await cursor.fetchone()
            if row is None:
                return None
            approvers, voters = widened(read_names(row[0]), read_names(row[1]), row[2], actors)
            written = (names_text(approvers), names_text(voters), pending_id)
            cursor = await db.execute(self.sql.set_approvers, written)
            changed = await cursor.fetchone()
            if changed is not None and entry is not None:
                await append_chained(db, self.sql, {pending_id: (entry,)}, self.judged_at())
        return None if changed is None else decode_row(changed)

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """One attempt at recording ``ballot``, in a transaction holding the row's lock."""

        async def settle(db: Any, status: Any, outcome: Outcome, now: float) -> PendingInput | None:
            recorded = as_recorded(pending_id, status, ballot.token, outcome)
            assert recorded is not None  # the id holds no NUL
            settled = await self.settling.settle_on(
                db, pending_id, recorded, outcome.history, now=now
            )
            return settled[0]

        await self.ready()
        async with self.link.connection() as db, db.transaction():
            judgement = await cast(db, self.sql, pending_id, ballot, self.judged_at(), settle)
        if judgement.write and judgement.record is not None:
            kind = PendingChangeKind.SETTLED if judgement.settles else PendingChangeKind.VOTED
            self.feed.emit(PendingChange(kind, pending_id))
        return judgement

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` to the request's chain, linked again when the head moved; its seq."""
        check_nul({"pending_id": pending_id})
        await self.ready()
        async with self.link.connection() as db, db.transaction():
            appended = await append_chained(db, self.sql, {pending_id: (entry,)}, self.judged_at())
        return appended[pending_id][0]

    async def append_history_at(
        self, pending_id: str, entry: dict[str, Any], seq: int, notices: Sequence[OutboxItem]
    ) -> bool:
        """Append ``entry`` as entry ``seq`` of the pending request's chain, and add
        ``notices`` to the outbox, in a transaction holding the request's row lock (a settle
        waits for it, as for a vote); ``False``, with neither written, when the request is
        not pending or the chain is not ``seq`` long."""
        check_nul({"pending_id": pending_id})
        await self.ready()
        written = False
        async with self.link.connection() as db, db.transaction() as writing:
            cursor = await db.execute(self.sql.select_approvers, (pending_id,))
            if await cursor.fetchone() is None:
                return False
            written = await append_at(db, self.sql, pending_id, entry, seq, self.judged_at())
            if not written:  # the chain's last append goes back with the rest
                raise Rollback(writing)
            await add_items(db, self.sql.schema, notices)
        return written

    async def append_history_after(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` as entry ``seq`` of the request's chain, open or settled, in a
        transaction of its own; ``False``, with nothing written, when the chain is not
        ``seq`` long (another transaction's entry took that seq)."""
        check_nul({"pending_id": pending_id})
        await self.ready()
        written = False
        async with self.link.connection() as db, db.transaction() as writing:
            written = await append_at(db, self.sql, pending_id, entry, seq, self.judged_at())
            if not written:  # the chain's last append goes back with the rest
                raise Rollback(writing)
        return written

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first."""
        if "\x00" in pending_id:
            return []
        await self.ready()
        async with self.link.connection() as db:
            cursor = await db.execute(self.sql.read_history, (pending_id,))
            rows = await cursor.fetchall()
        return [
            read_entry(str(read_back(line)), int(seq), pending_id=pending_id) for seq, line in rows
        ]

"""The PostgreSQL store's settle: one ``UPDATE`` of the request's row while it is pending.

Settles made at once share a transaction and a round trip (:mod:`._batch`); a settle inside
a transaction of the caller's, or of a vote, runs the same statement on that connection
(:meth:`Settling.settle_on`), and so does one that records the grant its approval makes
(:meth:`Settling.granting`), in the same transaction. A settle that wins appends its
history entries in its transaction, and its ``NOTIFY`` leaves with the commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from psycopg import AsyncConnection

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome, check_settle
from roomkit.stores._records import FIELDS, FORMAT
from roomkit.stores.base import PendingChange, PendingChangeKind, SettleOutcome
from roomkit.stores.postgres._batch import Recorded, SettleBatcher, settle_entries
from roomkit.stores.postgres._feed import hint
from roomkit.stores.postgres._grants import PostgresGrants
from roomkit.stores.postgres._history import append_chained
from roomkit.stores.postgres._link import LOST
from roomkit.stores.postgres._part import WritingPart
from roomkit.stores.postgres._schema import decode_row
from roomkit.stores.postgres._text import as_recorded

__all__ = ["Settling"]

_PENDING = PendingInputStatus.PENDING


@dataclass(slots=True, eq=False)
class Settling(WritingPart):
    """The settles of one store, on its pool."""

    _batcher: SettleBatcher = field(init=False)

    def __post_init__(self) -> None:
        self._batcher = SettleBatcher(self.link, self.sql, self.judged_at)

    async def batched(
        self,
        pending_id: str,
        recorded: Recorded,
        history: tuple[dict[str, Any], ...],
        *,
        plain: bool,
    ) -> tuple[PendingInput | None, PendingInput | None]:
        """One attempt, sharing a statement with the settles made meanwhile; its record if
        it won, and the request as it left it."""
        await self.ready()
        won, settled, stored = await self._batcher.settle(
            pending_id, recorded, history, plain=plain
        )
        if settled:
            self.feed.emit(PendingChange(PendingChangeKind.SETTLED, pending_id, won))
        return won, stored

    async def granting(
        self,
        pending_id: str,
        status: PendingInputStatus,
        token: str,
        outcome: Outcome,
        grants: PostgresGrants,
    ) -> PendingInput | None:
        """One attempt on a connection of its own, outside the batches: its record if it
        won. A settle that wins records ``outcome.grant`` in ``grants``, in its transaction."""
        recorded = as_recorded(pending_id, status, token, outcome)
        if recorded is None or outcome.grant is None:
            return None
        await self.ready()
        async with self.link.connection() as db, db.transaction():
            won, written = await self.settle_on(db, pending_id, recorded, outcome.history)
            if won is not None and written:
                await grants.add_in(db, outcome.grant)
        if written:
            self.feed.emit(PendingChange(PendingChangeKind.SETTLED, pending_id, won))
        return won

    async def settle_in(
        self,
        connection: AsyncConnection[Any],
        pending_id: str,
        status: PendingInputStatus,
        token: str | None,
        history: Sequence[dict[str, Any]],
        outcome: SettleOutcome,
    ) -> PendingInput | None:
        """The check-and-set on the caller's ``connection``, as :meth:`PostgresStore.settle_in
        <roomkit.stores.postgres.PostgresStore.settle_in>` describes it (and raising as it
        does); nothing is retried."""
        if not isinstance(connection, AsyncConnection):
            raise TypeError(
                f"connection must be the psycopg.AsyncConnection your transaction runs on, "
                f"got {type(connection).__name__}"
            )
        given = Outcome.given(outcome)
        checked = check_settle(pending_id, status, token, given, history)
        if checked is None:
            return None
        status, token, given = checked
        recorded = as_recorded(pending_id, status, token, given)
        if recorded is None:
            return None
        await self.ready()
        try:
            won, _ = await self.settle_on(connection, pending_id, recorded, given.history)
        except LOST as error:
            raise self.link.unavailable(error) from error
        return won

    async def settle_on(
        self,
        db: AsyncConnection[Any],
        pending_id: str,
        recorded: Recorded,
        history: tuple[dict[str, Any], ...] = (),
        *,
        now: float | None = None,
    ) -> tuple[PendingInput | None, bool]:
        """The check-and-set on ``db``: one statement, in a transaction (a savepoint when
        ``db`` is in one already) that a record which cannot be read rolls back; a settle
        that wins appends ``history`` in it. ``now`` judges the deadline (by default the
        store's clock, or the server's as it runs).

        Returns the winning record (or ``None``) and whether anything was written.

        Raises:
            CorruptRecordError: the stored record is not one this library wrote (the
                transaction is rolled back).
            StoreUnavailableError: the server cannot be reached.
        """
        sql = self.sql
        value, result, reason, withdrawn, by, token = recorded
        parameters = {
            "id": pending_id,
            "status": value,
            "result": result,
            "reason": reason,
            "withdrawn": withdrawn,
            "by": by,
            "token": token,
            "plain": False,
            "now": self.judged_at() if now is None else now,
            "format": FORMAT,
            "channel": sql.channel,
            "hint": hint(PendingChangeKind.SETTLED, pending_id),
        }
        async with db.transaction():
            cursor = await db.execute(sql.settle, parameters)
            row = await cursor.fetchone()
            if row is not None:
                # Decoded inside the transaction: a record that cannot be read stays as it was.
                record = decode_row(row)
                won = row[len(FIELDS)] == token
                if history:
                    entries = settle_entries(history, won)
                    await append_chained(db, sql, {pending_id: entries}, self.judged_at())
                return (record if won else None), True
        # Nothing written: unknown, not readable, settled already, or a timeout too early.
        cursor = await db.execute(sql.select_settled_one, (pending_id,))
        row = await cursor.fetchone()
        if row is None:
            return None, False
        current = decode_row(row)
        # Its own token: this settle, run again after a fault hid its commit, won.
        won = current.status is not _PENDING and row[len(FIELDS)] == token
        return (current if won else None), False

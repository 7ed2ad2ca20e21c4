"""Settles that share one transaction: the Postgres store's check-and-sets under load.

A settle's transaction takes two round trips, each one write to the socket in pipeline
mode: BEGIN and the UPDATE leave together and the settled row comes back, to be decoded
while the transaction is still open; then the COMMIT, whose flush to disk the server
waits for, leaves with the read of what a settle that lost needs to know. Settles made
while the event loop is busy gather: the next loop turn sends up to ``max_batch`` of them
in one transaction, their UPDATEs in the same first write, so that a batch too costs two
round trips and one flush. Each UPDATE is the same check-and-set a lone settle runs, by
primary key, with the NOTIFY of what it settles: a row is updated only while it is
pending, so exactly one settle wins per request whatever else shares its batch, and a
request appears at most once in a batch (a second settle of it waits for the next). The
UPDATEs go in the order of their ids, so that batches of two processes sharing requests
lock them in one order and take turns rather than deadlock; a deadlock the server reports
anyway (against a caller's own transaction) wrote nothing, and the batch runs again. A
``plain`` settle (an answer from a process that does not hold the request) also leaves a
request alone whose answer needs a check against it (an answer schema, an approval): it
comes back as the read of what a settle that lost needs to know, so that its caller checks
the answer and settles again, and an answer that needs no check costs no read first.

A settle that wins appends its history entries in the same transaction, chained as
:mod:`~roomkit.stores.postgres._history` chains every append, after the
UPDATEs: the NOTIFY that tells waiters leaves at the commit, with the entries stored. The
heads of their chains are read in the first write, after the UPDATEs, and the entries,
linked to them, leave with the COMMIT (with each chain's last append, which its audit
retention counts from, and its signed head), under a savepoint: an append elsewhere that took one
of their seqs first (the key refuses the second) rolls back to it, and the chains are
linked again to the heads as they are then, before the COMMIT.

One bad settle fails alone, never its batch: a settled record that cannot be read rolls
the transaction back, that settle raises, and the others run again; a batch the server
refuses for a value of one settle runs each of its settles on its own. Only a fault of the
server or the network fails the whole batch, and then each settle learns its outcome by
running again with its token, as a lone settle does.

The queue, the loop turns and the transactions in flight are
:class:`~roomkit.stores._batching.Batcher`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import psycopg

from roomkit.core.exceptions import CorruptRecordError, StoreError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._batching import Batcher, Call
from roomkit.stores._history import deadline_entry
from roomkit.stores._records import FIELDS, FORMAT
from roomkit.stores.base import PendingChangeKind
from roomkit.stores.postgres._feed import hint
from roomkit.stores.postgres._history import append_chained, linked_rows
from roomkit.stores.postgres._link import Link
from roomkit.stores.postgres._schema import Statements, decode_row

__all__ = ["Recorded", "SettleBatcher", "settle_entries"]


class Recorded(NamedTuple):
    """What a settle records, as the statement's parameters take it."""

    status: str
    """The outcome's status value."""
    result: str | None
    """The answer, stored escaped (``None`` for none)."""
    reason: str | None
    """The rejection's reason, stored escaped."""
    withdrawn: int
    """``1`` when the request was withdrawn, else ``0``."""
    settled_by: str | None
    """Who settled it, stored escaped."""
    token: str
    """The settle token."""


Settled = tuple[PendingInput | None, bool, PendingInput | None]
"""A settle's outcome: the record when it won, whether the batch wrote the request, and the
request as the batch left it (``None`` when it is not stored)."""

_ID = FIELDS.index("pending_id")
_TOKEN = len(FIELDS)
_PENDING = PendingInputStatus.PENDING.value
_TURNS = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
_VALUES = ("id", "status", "result", "reason", "withdrawn", "by", "token", "plain")
"""The parameters of a settle that name its id and then what it records, in order."""
_TURN_RETRIES = 5
"""Times a batch runs again after the server rolled it back to break a deadlock."""
_CHAINS = "roomkit_chains"
"""The savepoint before a batch's history entries: a seq taken meanwhile rolls back to it."""
_FAILED = psycopg.pq.TransactionStatus.INERROR
_OPEN = (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR)
"""A connection's states inside a transaction that a failed try leaves to roll back."""


@dataclass(frozen=True, eq=False)
class _Settle:
    pending_id: str
    recorded: Recorded
    history: tuple[dict[str, Any], ...]
    """The entries to append when this settle wins."""
    plain: bool
    """Whether the settle leaves alone a request whose answer needs a check first."""


class SettleBatcher:
    """Runs the settles of one loop turn in one transaction.

    Args:
        link: the store's pool.
        statements: the store's SQL.
        now: the time the deadlines are judged by, read once per batch; ``None`` has the
            server judge them by its own clock.
        max_batch: the most settles in one transaction.
        max_in_flight: the most transactions running at once; settles made meanwhile
            queue for the next.
    """

    def __init__(
        self,
        link: Link,
        statements: Statements,
        now: Callable[[], float | None],
        *,
        max_batch: int = 128,
        max_in_flight: int = 4,
    ) -> None:
        self._link = link
        self._sql = statements
        self._now = now
        # A request twice in one transaction: the second runs after the first.
        self._batches: Batcher[_Settle, Settled] = Batcher(
            self._settle_all,
            max_batch=max_batch,
            max_in_flight=max_in_flight,
            key=lambda settle: settle.pending_id,
        )

    async def settle(
        self,
        pending_id: str,
        recorded: Recorded,
        history: tuple[dict[str, Any], ...] = (),
        *,
        plain: bool = False,
    ) -> Settled:
        """The check-and-set of one settle, sent with the others of this loop turn;
        ``history`` joins the request's chain in the same transaction if it wins. A
        ``plain`` settle writes nothing to a request whose answer needs a check against
        it (an answer schema, an approval): its caller checks and settles again.

        Raises:
            StoreUnavailableError: the server did not answer; the outcome is unknown.
            CorruptRecordError: the stored record cannot be read (nothing was written).
        """
        return await self._batches.submit(_Settle(pending_id, recorded, history, plain))

    async def _settle_all(self, batch: list[Call[_Settle, Settled]]) -> None:
        while batch:
            try:
                outcomes = await self._attempt([call.value for call in batch])
            except _Broken as broken:
                # One settled record cannot be read: it fails alone, the others run again.
                for call in batch:
                    if call.value is broken.item:
                        call.fail(broken.error)
                batch = [call for call in batch if call.value is not broken.item]
                continue
            except StoreError as fault:
                for call in batch:
                    call.fail(fault)
                return
            except Exception as error:
                if len(batch) == 1:
                    batch[0].fail(error)
                    return
                # The server refused the statement for a value of one of the settles:
                # each runs on its own, so that only that one fails.
                for call in batch:
                    await self._settle_all([call])
                return
            for call, outcome in zip(batch, outcomes, strict=True):
                if isinstance(outcome, CorruptRecordError):
                    call.fail(outcome)
                else:
                    call.resolve(outcome)
            return

    async def _attempt(self, batch: list[_Settle]) -> list[Settled | CorruptRecordError]:
        """One transaction settling ``batch``, then a read of the settles that lost."""
        now = self._now()
        shared = {"now": now, "format": FORMAT, "channel": self._sql.channel}
        # In the order of the ids: two batches sharing requests lock them in one order.
        ordered = sorted(batch, key=lambda item: item.pending_id)
        parameters = [
            {
                **dict(zip(_VALUES, (item.pending_id, *item.recorded, item.plain), strict=True)),
                "hint": hint(PendingChangeKind.SETTLED, item.pending_id),
                **shared,
            }
            for item in ordered
        ]
        async with self._link.connection() as db:
            for turn in range(_TURN_RETRIES + 1):
                try:
                    written, found = await self._transaction(db, batch, ordered, parameters)
                    break
                except _TURNS:
                    if turn == _TURN_RETRIES:
                        raise
        outcomes: list[Settled | CorruptRecordError] = []
        for item in batch:
            if item.pending_id in written:
                record, won = written[item.pending_id]
                outcomes.append((record if won else None, True, record))
                continue
            try:
                outcomes.append(_own(found.get(item.pending_id), item))
            except CorruptRecordError as error:
                outcomes.append(error)
        return outcomes

    async def _transaction(
        self,
        db: psycopg.AsyncConnection[Any],
        batch: list[_Settle],
        ordered: list[_Settle],
        parameters: list[dict[str, Any]],
    ) -> tuple[dict[str, tuple[PendingInput, bool]], dict[str, Any]]:
        """The settles ``db`` wrote, each with its record and whether its own token won, and the
        stored rows of those it did not write, by id: one transaction in two round trips
        (see the module docstring)."""
        now = parameters[0]["now"]
        chains: dict[str, tuple[dict[str, Any], ...]] = {}
        losers: list[str] = []
        try:
            try:
                async with db.pipeline() as pipeline, db.cursor() as cursor:
                    await db.execute("BEGIN")
                    if len(parameters) == 1:
                        await cursor.execute(self._sql.settle, parameters[0])
                    else:
                        await cursor.executemany(self._sql.settle, parameters, returning=True)
                    chained = [item.pending_id for item in ordered if item.history]
                    heads = (
                        await db.execute(self._sql.history_heads, (chained,)) if chained else None
                    )
                    # A Sync inside BEGIN ends no transaction: it sends what is queued, and
                    # brings every reply back (or raises the server's refusal).
                    await pipeline.sync()
                    written, chains = await _decoded(cursor, ordered)
                    losers = [item.pending_id for item in batch if item.pending_id not in written]
                    if chains and heads is not None:
                        # In the settles' transaction: whoever hears of a win finds its
                        # entries. Linked to the heads read after the UPDATEs, they leave
                        # with the COMMIT.
                        read = await heads.fetchall()
                        rows, signed = linked_rows(read, chains, self._sql.anchoring)
                        touched = [(head[0], now, *head[1:]) for head in signed]
                        await db.execute(f"SAVEPOINT {_CHAINS}")
                        # Each chain's last append (for its audit retention) and its signed
                        # head; then its rows.
                        await cursor.executemany(self._sql.touch_head, touched)
                        await cursor.executemany(self._sql.append_history, rows)
                    # The COMMIT releases the savepoint: one statement less before it.
                    await db.execute("COMMIT")
                    lost = (
                        await db.execute(self._sql.select_settled_many, (losers,))
                        if losers
                        else None
                    )
                # Leaving the pipeline sent the COMMIT and the read, and brought the replies.
            except psycopg.errors.UniqueViolation:
                if not chains or db.info.transaction_status is not _FAILED:
                    raise
                lost = await self._chain_again(db, chains, losers, now)
        except BaseException:
            if db.info.transaction_status in _OPEN:
                # A connection that breaks here is dropped by the pool; the fault stands.
                with contextlib.suppress(psycopg.Error):
                    await db.execute("ROLLBACK")
            raise
        found = {row[_ID]: row for row in await lost.fetchall()} if lost is not None else {}
        return written, found

    async def _chain_again(
        self,
        db: psycopg.AsyncConnection[Any],
        chains: dict[str, tuple[dict[str, Any], ...]],
        losers: list[str],
        now: float | None,
    ) -> psycopg.AsyncCursor[Any] | None:
        """Another append took a seq of ``chains`` first: link them again, to the heads as
        they are now, and commit; the read of ``losers``."""
        await db.execute(f"ROLLBACK TO SAVEPOINT {_CHAINS}")
        await append_chained(db, self._sql, chains, now)
        await db.execute("COMMIT")
        return await db.execute(self._sql.select_settled_many, (losers,)) if losers else None


async def _decoded(
    cursor: psycopg.AsyncCursor[Any], ordered: list[_Settle]
) -> tuple[dict[str, tuple[PendingInput, bool]], dict[str, tuple[dict[str, Any], ...]]]:
    """The settles the UPDATEs on ``cursor`` wrote, each with its record and whether its own
    token won, and the history entries each appends; decoded while the transaction is open,
    so that a record that cannot be read stays as it was (:class:`_Broken` leaves it)."""
    written: dict[str, tuple[PendingInput, bool]] = {}
    chains: dict[str, tuple[dict[str, Any], ...]] = {}
    for item in ordered:
        row = await cursor.fetchone()
        if row is not None:
            try:
                record = decode_row(row)
            except CorruptRecordError as error:
                raise _Broken(item, error) from error
            won = row[_TOKEN] == item.recorded[5]
            written[item.pending_id] = (record, won)
            if item.history:
                chains[item.pending_id] = settle_entries(item.history, won)
        cursor.nextset()
    return written, chains


def settle_entries(history: tuple[dict[str, Any], ...], won: bool) -> tuple[dict[str, Any], ...]:
    """What a settle that wrote its request appends: its own entries when it won, the
    deadline's entry when the store recorded the timeout in its place."""
    return history if won else (deadline_entry(),)


def _own(row: Any, item: _Settle) -> Settled:
    """The outcome of a settle that wrote nothing: the record when its token won before (a
    settle run again after a fault hid its commit), ``None`` when another settle won, or
    none yet; and the stored record.

    Raises:
        CorruptRecordError: the record cannot be read.
    """
    if row is None:
        return None, False, None
    record = decode_row(row)
    won = record.status.value != _PENDING and row[_TOKEN] == item.recorded[5]
    return (record if won else None), False, record


class _Broken(Exception):
    """Leaves the transaction (so that it rolls back) when one settled record is unreadable."""

    def __init__(self, item: _Settle, error: CorruptRecordError) -> None:
        super().__init__(item.pending_id, error)
        self.item = item
        self.error = error

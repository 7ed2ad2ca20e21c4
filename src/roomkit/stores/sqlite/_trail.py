"""The SQLite store's trail: its chains, signed heads and checkpoints, read and written.

The heads are columns of ``roomkit_chains``, written by every append
(:mod:`~roomkit.stores.sqlite._history`); ``checked`` is the length the
last checkpoint took, so a head has changed since while ``checked IS NOT length``. A
checkpoint is written in one write transaction: the changed heads and the last checkpoint
read, the new one inserted (its number is the table's key: a writer elsewhere cannot slip
one in between), and each head it took signed again with its number, while the head is
still the one read. The trail is read in one read transaction: one snapshot of the file;
so is its stream, every page of it (an append meanwhile is not in it, and no head it gives
is newer than its chain).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, TypeVar

import aiosqlite

from roomkit.stores._audit_keys import AuditKeys
from roomkit.stores._checkpoints import TAKE_HEAD, plan_checkpoint, report, signing_keys, taken_rows
from roomkit.stores._trail import (
    PAGE,
    Anchoring,
    ChainRead,
    Checkpoint,
    CheckpointReport,
    HeadChange,
    Trail,
    TrailPages,
    stored_head,
    stored_text,
)
from roomkit.stores._trail_check import unsigned_heads
from roomkit.stores.sqlite._link import fetch_all, query
from roomkit.stores.sqlite._schema import CHAINS_UNCHECKED

__all__ = ["SQLiteTrail"]

T = TypeVar("T")

# The ids and texts are read as bytes (decoded by ``stored_text``): bytes a hand edit left in
# a text column that are not UTF-8 are named by the check instead of failing the read.
ALL_HISTORY = (
    "SELECT CAST(pending_id AS BLOB), seq, CAST(entry AS BLOB) FROM roomkit_history "
    "ORDER BY pending_id, seq"
)
ALL_HEADS = (
    "SELECT CAST(pending_id AS BLOB), length, CAST(head AS BLOB), epoch, CAST(mac AS BLOB) "
    "FROM roomkit_chains WHERE length IS NOT NULL"
)
CHANGED_HEADS = (
    "SELECT CAST(pending_id AS BLOB), length, CAST(head AS BLOB), epoch, CAST(mac AS BLOB), "
    "checked "
    "FROM roomkit_chains "
    "INDEXED BY roomkit_chains_unchecked WHERE checked IS NOT length ORDER BY pending_id"
)
ALL_CHECKPOINTS = (
    "SELECT n, CAST(body AS BLOB), CAST(mac AS BLOB) FROM roomkit_checkpoints ORDER BY n"
)
ALL_IDS = (
    "SELECT CAST(pending_id AS BLOB) FROM roomkit_history GROUP BY pending_id UNION "
    "SELECT CAST(pending_id AS BLOB) FROM roomkit_chains WHERE length IS NOT NULL"
)
"""The id of every chain and every head, as the bytes stored."""
ONE = "CAST(? AS TEXT), ?"
"""One id of :data:`PAGE_HISTORY` and :data:`PAGE_HEADS`, given twice as its bytes: as the text
a store writes (whether UTF-8 or not), and as the bytes a hand edit may have left."""
PAGE_HISTORY = (
    "SELECT CAST(pending_id AS BLOB), seq, CAST(entry AS BLOB) FROM roomkit_history "
    "WHERE pending_id IN ({ids}) ORDER BY pending_id, seq"
)
PAGE_HEADS = (
    "SELECT CAST(pending_id AS BLOB), length, CAST(head AS BLOB), epoch, CAST(mac AS BLOB) "
    "FROM roomkit_chains WHERE length IS NOT NULL AND pending_id IN ({ids})"
)
LAST_CHECKPOINT = (
    "SELECT n, CAST(body AS BLOB), CAST(mac AS BLOB), (SELECT min(n) FROM roomkit_checkpoints) "
    "FROM roomkit_checkpoints ORDER BY n DESC LIMIT 1"
)
"""The last checkpoint, and the number of the first."""
TAKE = TAKE_HEAD.format(chains="roomkit_chains", mark="?")
ADD_CHECKPOINT = "INSERT INTO roomkit_checkpoints (n, body, mac) VALUES (?, ?, ?)"
UNSIGNED_CHAINS = (
    "SELECT CAST(h.pending_id AS BLOB), h.seq, CAST(h.entry AS BLOB) FROM roomkit_history h "
    "LEFT JOIN roomkit_chains c ON c.pending_id = h.pending_id "
    "WHERE c.pending_id IS NULL OR c.mac IS NULL ORDER BY h.pending_id, h.seq"
)
SIGN_HEAD = (
    "INSERT INTO roomkit_chains (pending_id, last_at, length, head, epoch, mac) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (pending_id) DO UPDATE SET length = excluded.length, "
    "head = excluded.head, epoch = excluded.epoch, mac = excluded.mac "
    "WHERE roomkit_chains.mac IS NULL"
)
"""Parameters: pending_id, now (the chain's last append, if it had none), the signed head."""

Session = Callable[[], AbstractAsyncContextManager[aiosqlite.Connection]]
Writer = Callable[[Callable[[sqlite3.Connection, float], Any]], Any]


async def _pages(
    db: aiosqlite.Connection, ids: list[tuple[str, bytes]], page: int
) -> AsyncIterator[list[ChainRead]]:
    """The chains and heads of ``ids`` (each id as read back, and its bytes), in their
    order, ``page`` ids at a time."""
    for first in range(0, len(ids), page):
        batch = ids[first : first + page]
        marks = ", ".join([ONE] * len(batch))
        parameters = [raw for _, raw in batch for _ in range(2)]
        part = Trail.from_rows(
            await fetch_all(db, PAGE_HISTORY.format(ids=marks), parameters),
            await fetch_all(db, PAGE_HEADS.format(ids=marks), parameters),
            (),
        )
        yield list(part.chain_reads(pending_id for pending_id, _ in batch))


class SQLiteTrail:
    """The trail of one SQLite store.

    Args:
        session: the store's read session.
        write: the store's write (runs a function in a write transaction).
        retention: the store's audit retention, recorded in its checkpoints.
    """

    def __init__(self, session: Session, write: Writer, retention: float | None) -> None:
        self.anchoring = Anchoring.from_environment()
        """What the store signs the heads it writes with."""
        self._session = session
        self._write = write
        self._retention = retention

    def use_keys(self, keys: AuditKeys | None) -> None:
        """Sign with ``keys`` from now on (``None``: write heads unsigned)."""
        self.anchoring.keys = keys

    async def read(self) -> Trail:
        """The chains, heads and checkpoints, as one snapshot of the file."""
        async with self._session() as db:
            try:
                await db.execute_fetchall("BEGIN")
                history = await fetch_all(db, ALL_HISTORY)
                heads = await fetch_all(db, ALL_HEADS)
                checkpoints = await fetch_all(db, ALL_CHECKPOINTS)
            finally:
                # Queued even for a caller cancelled since, behind a BEGIN that may still
                # run: the connection is never left in a read that pins the log.
                with suppress(sqlite3.Error):
                    await db.execute_fetchall("COMMIT")
        return self.anchoring.read(Trail.from_rows(history, heads, checkpoints))

    @asynccontextmanager
    async def stream(self, *, page: int = PAGE) -> AsyncIterator[TrailPages]:
        """The chains, heads and checkpoints, ``page`` chains at a time, as one snapshot of
        the file: every page is read in the one read transaction that read the checkpoints.
        What it holds besides a page is each request's id. The store's connection is held
        until the stream ends: every call on this store (a read as much as a write) waits
        for it, so none may be awaited inside the stream, which would wait for ever; another
        store on the file (another process's) is not held up."""
        async with self._session() as db:
            try:
                await db.execute_fetchall("BEGIN")
                checkpoints = Trail.from_rows((), (), await fetch_all(db, ALL_CHECKPOINTS))
                # Each id under the text it reads back as: an id stored as text and one stored
                # as the same bytes are one chain, as ``Trail.from_rows`` reads them.
                ids = {stored_text(raw): raw for (raw,) in await fetch_all(db, ALL_IDS)}
                self.anchoring.read(checkpoints)
                yield TrailPages(
                    checkpoints.checkpoints, set(), _pages(db, sorted(ids.items()), page)
                )
            finally:
                # As in ``read``: the read is ended whatever happened to its caller.
                with suppress(sqlite3.Error):
                    await db.execute_fetchall("COMMIT")

    async def adopt(self) -> tuple[int, list[str]]:
        """Sign, as they stand, the heads of the chains that hold and have none signed.

        Raises:
            AuditKeyError: the store holds no audit key.
        """
        signing_keys(self.anchoring)

        def write(db: sqlite3.Connection, now: float) -> tuple[int, list[str]]:
            # Read as the check reads them: a seq a hand edit left holding text breaks its
            # chain, which is left unsigned and named, while the others are signed.
            chains = Trail.from_rows(query(db, UNSIGNED_CHAINS), (), ()).chains
            signed, broken = unsigned_heads(chains, self.anchoring)
            db.executemany(SIGN_HEAD, [(p, now, *head) for p, head in signed.items()])
            return len(signed), broken

        done: tuple[int, list[str]] = await self._write(write)
        return done

    async def checkpoint(self) -> CheckpointReport:
        """Write a checkpoint of every head that changed since the last one.

        Raises:
            AuditKeyError: the store holds no audit key.
            CorruptRecordError: the last checkpoint does not hold its signature.
        """
        keys = signing_keys(self.anchoring)

        def write(db: sqlite3.Connection, now: float) -> CheckpointReport:
            db.execute(CHAINS_UNCHECKED)
            last = query(db, LAST_CHECKPOINT)
            changes = [
                HeadChange(stored_text(row[0]), stored_head(*row[1:5]), row[5] is not None)
                for row in query(db, CHANGED_HEADS)
            ]
            plan = plan_checkpoint(
                Checkpoint(int(last[0][0]), stored_text(last[0][1]), stored_text(last[0][2]))
                if last
                else None,
                changes,
                keys,
                first=int(last[0][3]) if last else None,
                retention=self._retention,
                now=now,
            )
            if plan.checkpoint is not None:
                db.execute(ADD_CHECKPOINT, plan.checkpoint)
                db.executemany(TAKE, taken_rows(plan))
            return report(plan)

        done: CheckpointReport = await self._write(write)
        if done.checkpoint is not None:
            self.anchoring.knew(done.checkpoint.n)
        return done

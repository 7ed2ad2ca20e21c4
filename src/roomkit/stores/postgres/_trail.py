"""The Postgres store's trail: its chains, signed heads and checkpoints, read and written.

The heads are columns of ``roomkit_chains``, written by every append
(:mod:`~roomkit.stores.postgres._history`); ``checked`` is the length the
last checkpoint took, so a head has changed since while ``checked IS DISTINCT FROM
length``. A checkpoint is written in one transaction under an advisory lock (writers take
turns): the changed heads and the last checkpoint read, the new one inserted, and each head
it took signed again with its number, while the head is still the one read (an append that
holds the row meanwhile is waited for, and its new head left for the next checkpoint). The
trail is read in one ``REPEATABLE READ`` transaction: one snapshot of the database; so is its
stream, every page of it (an append meanwhile is not in it, and no head it gives is newer
than its chain).

An adoption reads the unsigned chains' entries and their rows' lengths in one statement (one
snapshot), and signs each head with one check-and-set on the chain's row (still unsigned, and
as long as it was read): an append committed meanwhile leaves its chain for the next
adoption; of two adoptions at once, the second waits for the first's row lock and then finds
the head signed, and each counts only the heads it wrote.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncConnection

from roomkit.stores._audit_keys import AuditKeys
from roomkit.stores._checkpoints import TAKE_HEAD, plan_checkpoint, report, signing_keys, taken_rows
from roomkit.stores._durable_base import DurableBase
from roomkit.stores._trail import (
    PAGE,
    ChainRead,
    Checkpoint,
    CheckpointReport,
    HeadChange,
    Trail,
    TrailPages,
    stored_head,
)
from roomkit.stores._trail_check import unsigned_heads
from roomkit.stores.postgres._link import SILENCE, Link
from roomkit.stores.postgres._schema import Statements, read_back
from roomkit.stores.postgres._silence import silenced

__all__ = ["PostgresTrail"]


class PostgresTrail:
    """The trail of one Postgres store.

    Args:
        store: the store (its audit retention is recorded in its checkpoints, and its clock
            gives their time).
        link: the store's pool.
        statements: the store's SQL (its ``anchoring`` is the trail's).
        ready: opens the store (lazily), or refuses once it was closed.
    """

    def __init__(
        self,
        store: DurableBase,
        link: Link,
        statements: Statements,
        ready: Callable[[], Awaitable[None]],
    ) -> None:
        self.anchoring = statements.anchoring
        """What the store signs the heads it writes with."""
        self._link = link
        self._ready = ready
        self._store = store
        s = f'"{statements.schema}"'
        chains, checkpoints = f"{s}.roomkit_chains", f"{s}.roomkit_checkpoints"
        self._all_history = (
            f"SELECT pending_id, seq, entry FROM {s}.roomkit_history ORDER BY pending_id, seq"
        )
        self._all_heads = (
            f"SELECT pending_id, length, head, epoch, mac FROM {chains} WHERE length IS NOT NULL"
        )
        self._changed = (
            f"SELECT pending_id, length, head, epoch, mac, checked FROM {chains} "
            "WHERE checked IS DISTINCT FROM length ORDER BY pending_id"
        )
        self._all_checkpoints = f"SELECT n, body, mac FROM {checkpoints} ORDER BY n"
        self._all_ids = (
            f"SELECT pending_id FROM {s}.roomkit_history GROUP BY pending_id UNION "
            f"SELECT pending_id FROM {chains} WHERE length IS NOT NULL"
        )
        self._page_history = (
            f"SELECT pending_id, seq, entry FROM {s}.roomkit_history "
            "WHERE pending_id = ANY(%s) ORDER BY pending_id, seq"
        )
        self._page_heads = (
            f"SELECT pending_id, length, head, epoch, mac FROM {chains} "
            "WHERE length IS NOT NULL AND pending_id = ANY(%s)"
        )
        self._last = (
            f"SELECT n, body, mac, (SELECT min(n) FROM {checkpoints}) FROM {checkpoints} "
            "ORDER BY n DESC LIMIT 1"
        )
        """The last checkpoint, and the number of the first."""
        self._add = f"INSERT INTO {checkpoints} (n, body, mac) VALUES (%s, %s, %s)"
        self._take = TAKE_HEAD.format(chains=chains, mark="%s")
        self._lock = f"roomkit checkpoints {statements.schema}"
        self._unsigned = (
            f"SELECT h.pending_id, h.seq, h.entry, c.length FROM {s}.roomkit_history h "
            f"LEFT JOIN {chains} c ON c.pending_id = h.pending_id "
            "WHERE c.pending_id IS NULL OR c.mac IS NULL ORDER BY h.pending_id, h.seq"
        )
        """The unsigned chains' entries, each with its chain's length: one statement, so
        that the length is the one of the entries read (one snapshot)."""
        self._sign = (
            f"INSERT INTO {chains} AS c (pending_id, last_at, length, head, epoch, mac) VALUES "
            "(%s, COALESCE(%s::double precision, extract(epoch FROM statement_timestamp())), "
            "%s, %s, %s, %s) ON CONFLICT (pending_id) DO UPDATE SET length = excluded.length, "
            "head = excluded.head, epoch = excluded.epoch, mac = excluded.mac "
            "WHERE c.mac IS NULL AND c.length IS NOT DISTINCT FROM %s"
        )
        """Parameters: pending_id, now, the signed head, and the length the chain's row had
        (an append or another adoption meanwhile leaves it as that one made it)."""

    def use_keys(self, keys: AuditKeys | None) -> None:
        """Sign with ``keys`` from now on (``None``: write heads unsigned)."""
        self.anchoring.keys = keys

    async def read(self) -> Trail:
        """The chains, heads and checkpoints, as one snapshot of the database."""
        await self._ready()
        async with self._link.connection() as db, db.transaction():
            await db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            history = await (await db.execute(self._all_history)).fetchall()
            heads = await (await db.execute(self._all_heads)).fetchall()
            checkpoints = await (await db.execute(self._all_checkpoints)).fetchall()
        texts = [(pending_id, seq, read_back(text)) for pending_id, seq, text in history]
        return self.anchoring.read(Trail.from_rows(texts, heads, checkpoints))

    @asynccontextmanager
    async def stream(self, *, page: int = PAGE) -> AsyncIterator[TrailPages]:
        """The chains, heads and checkpoints, ``page`` chains at a time, as one snapshot of
        the database: every page is read in the one ``REPEATABLE READ`` transaction that
        read the checkpoints. What it holds besides a page is each request's id.

        The connection is held as long as the reader takes over the pages (an export written
        to a slow pipe); the server's silence is bounded per read (:data:`SILENCE` for the
        ids, and again for each page), not over the whole stream."""
        await self._ready()
        async with self._link.connection(bound=math.inf) as db, db.transaction():
            async with silenced(db, SILENCE):
                await db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                checkpoints = await (await db.execute(self._all_checkpoints)).fetchall()
                rows = await (await db.execute(self._all_ids)).fetchall()
            ids = sorted(str(pending_id) for (pending_id,) in rows)
            trail = self.anchoring.read(Trail.from_rows((), (), checkpoints))
            yield TrailPages(trail.checkpoints, set(), self._pages(db, ids, page))

    async def _pages(
        self, db: AsyncConnection[Any], ids: list[str], page: int
    ) -> AsyncIterator[list[ChainRead]]:
        """The chains and heads of ``ids``, in their order, ``page`` at a time."""
        for first in range(0, len(ids), page):
            batch = ids[first : first + page]
            async with silenced(db, SILENCE):
                history = await (await db.execute(self._page_history, (batch,))).fetchall()
                heads = await (await db.execute(self._page_heads, (batch,))).fetchall()
            texts = [(pending_id, seq, read_back(text)) for pending_id, seq, text in history]
            part = Trail.from_rows(texts, heads, ())
            yield list(part.chain_reads(batch))

    async def adopt(self) -> tuple[int, list[str]]:
        """Sign, as they stand, the heads of the chains that hold and have none signed; how
        many it signed (not those an append or another adoption changed meanwhile), and the
        chains left because they do not hold.

        Raises:
            AuditKeyError: the store holds no audit key.
        """
        signing_keys(self.anchoring)
        await self._ready()
        async with self._link.connection() as db, db.transaction():
            rows = await (await db.execute(self._unsigned)).fetchall()
            chains: dict[str, list[tuple[int, str]]] = {}
            lengths: dict[str, int | None] = {}
            for pending_id, seq, text, length in rows:
                chains.setdefault(str(pending_id), []).append((int(seq), str(read_back(text))))
                lengths[str(pending_id)] = length
            signed, broken = unsigned_heads(chains, self.anchoring)
            now = self._store.clock()
            async with db.cursor() as cursor:
                await cursor.executemany(
                    self._sign,
                    [(p, now, *head, lengths.get(p)) for p, head in sorted(signed.items())],
                )
                # The rows written: a check-and-set another writer came first to writes none.
                done = max(cursor.rowcount, 0)
        return done, broken

    async def checkpoint(self) -> CheckpointReport:
        """Write a checkpoint of every head that changed since the last one.

        Raises:
            AuditKeyError: the store holds no audit key.
            CorruptRecordError: the last checkpoint does not hold its signature.
        """
        keys = signing_keys(self.anchoring)
        await self._ready()
        async with self._link.connection() as db, db.transaction():
            await db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._lock,))
            last = await (await db.execute(self._last)).fetchone()
            changes = [
                HeadChange(str(row[0]), stored_head(*row[1:5]), row[5] is not None)
                for row in await (await db.execute(self._changed)).fetchall()
            ]
            plan = plan_checkpoint(
                None if last is None else Checkpoint(int(last[0]), str(last[1]), str(last[2])),
                changes,
                keys,
                first=None if last is None else int(last[3]),
                retention=self._store.audit_retention,
                now=self._store.clock(),
            )
            if plan.checkpoint is not None:
                await db.execute(self._add, tuple(plan.checkpoint))
                async with db.cursor() as cursor:
                    await cursor.executemany(self._take, taken_rows(plan))
        if plan.checkpoint is not None:
            self.anchoring.knew(plan.checkpoint.n)
        return report(plan)

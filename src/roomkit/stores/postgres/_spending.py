"""The PostgreSQL store's spend-once ledger, as a part of the store.

One row per spent entry; the spend is an ``INSERT ... ON CONFLICT`` that replaces only an
expired row, so exactly one caller among every process on the database spends an entry.
Every write first drops the rows already expired on the store's clock. A spend writes its
token in its row: one whose COMMIT's reply was lost (a connection cut, a server killed)
runs again with it while the server is away (up to the store's ``settle_retry``, as a
settle), finds the row its own, and is reported won, not refused to the caller who made it.
A refund runs again the same way, with a token of its own: the statement that deletes the
entry's row also writes a mark of the token (a row under a name no entry is stored as, kept
for :data:`MARK_KEEP` seconds or twice the store's ``settle_retry``), and does nothing where
the mark is already written. A refund run again after its reply was lost thus never deletes
the row of a spend made in between.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from roomkit.stores._ledger import (
    REFUND_UNKNOWN,
    SPEND_UNKNOWN,
    check_entries,
    check_until,
    spent_time,
)
from roomkit.stores.postgres._part import Part
from roomkit.stores.postgres._schema import read_back, stored
from roomkit.stores.postgres._text import ledger_entry

__all__ = ["MARK_KEEP", "Spending"]

MARK_KEEP = 600.0
"""Seconds, on the store's clock, a refund's mark stays at the least: long after the refund
stopped running again."""


@dataclass(slots=True, eq=False)
class Spending(Part):
    """The ledger's four calls on one store's pool."""

    clock: Callable[[], float]
    """The store's clock."""
    knowing: Callable[..., Awaitable[Any]]
    """Runs an attempt again while the server is away (the store's ``_settle_knowing``)."""
    retried: float
    """Seconds the store runs a write again while the server is away (its ``settle_retry``)."""

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """The check-and-set of the ledger: ``True`` for the first caller only."""
        token = secrets.token_hex(16)
        what = f"the spend of {entry!r}"

        async def attempt() -> bool:
            spent, _ = await self._write(self.sql.ledger_spend, entry, until, token)
            return spent

        spent: bool = await self.knowing(
            attempt, entry, self.link.where, what=what, advice=SPEND_UNKNOWN
        )
        return spent

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry``, so that it may be spent again (once: see the module's text)."""
        parameters = {
            "entry": ledger_entry(entry),
            "token": secrets.token_hex(16),
            "keep": max(MARK_KEEP, 2 * self.retried),
        }
        what = f"the refund of {entry!r}"

        async def attempt() -> None:
            await self.ready()
            async with self.link.connection() as db:
                await db.execute(self.sql.ledger_refund, {**parameters, "now": self.clock()})

        await self.knowing(attempt, entry, self.link.where, what=what, advice=REFUND_UNKNOWN)

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now, replacing an earlier record; returns the time."""
        _, now = await self._write(self.sql.ledger_record, entry, until)
        return now

    async def _write(
        self, statement: str, entry: str, until: float | None, token: str | None = None
    ) -> tuple[bool, float]:
        """Drop the expired rows, then run ``statement`` (the spend, with its ``token``, or
        the record) for ``entry`` at now, in one transaction; whether it returned a row, and
        now."""
        entry, until = ledger_entry(entry), check_until(until)
        await self.ready()
        async with self.link.connection() as db, db.transaction():
            now = self.clock()
            await db.execute(self.sql.ledger_prune, (now,))
            parameters = {"entry": entry, "now": now, "until": until, "token": token}
            cursor = await db.execute(statement, parameters)
            returned = cursor.description is not None and await cursor.fetchone() is not None
            return returned, now

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, each with the time it was spent."""
        wanted = [stored(entry) for entry in check_entries(entries)]
        if not wanted:
            return {}
        await self.ready()
        async with self.link.connection() as db:
            cursor = await db.execute(self.sql.ledger_read, (wanted, self.clock()))
            rows = await cursor.fetchall()
        return {str(read_back(entry)): spent_time(spent_at) for entry, spent_at in rows}

"""The SQLite store's spend-once ledger, as a part of the store: its checks and writes.

The rows and statements are :mod:`~roomkit.stores.sqlite._ledger`'s; this part runs them on
the store's connection, each write in the store's ``BEGIN IMMEDIATE`` transaction, so that
exactly one caller among every process on the file spends an entry.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

from roomkit.stores._ledger import check_entries, check_entry, check_until
from roomkit.stores.sqlite import _ledger as ledger
from roomkit.stores.sqlite._part import Part

__all__ = ["Spending"]

T = TypeVar("T")


@dataclass(slots=True, eq=False)
class Spending(Part):
    """The ledger's four calls on one store's connection."""

    clock: Callable[[], float]
    """The store's clock."""

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """The check-and-set of the ledger: ``True`` for the first caller only."""
        entry, until = check_entry(entry), check_until(until)

        def write(db: sqlite3.Connection, now: float) -> bool:
            return ledger.spend(db, entry, until, now)

        return bool(await self.write(write))

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry``, so that it may be spent again."""
        entry = check_entry(entry)

        def write(db: sqlite3.Connection, now: float) -> None:
            ledger.refund(db, entry)

        await self.write(write)

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now, replacing an earlier record; returns the time."""
        entry, until = check_entry(entry), check_until(until)

        def write(db: sqlite3.Connection, now: float) -> float:
            ledger.record(db, entry, until, now)
            return now

        return float(await self.write(write))

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, each with the time it was spent."""
        wanted = check_entries(entries)
        if not wanted:
            return {}
        async with self.session() as db:
            return await ledger.read(db, wanted, self.clock())

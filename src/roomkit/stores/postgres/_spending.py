"""The PostgreSQL store's spend-once ledger, as a part of the store.

One row per spent entry; the spend is an ``INSERT ... ON CONFLICT`` that replaces only an
expired row, so exactly one caller among every process on the database spends an entry.
Every write first drops the rows already expired on the store's clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

from roomkit.stores._ledger import check_entries, check_until
from roomkit.stores.postgres._link import Link
from roomkit.stores.postgres._schema import Statements
from roomkit.stores.postgres._text import ledger_entry

__all__ = ["Spending"]


class Spending:
    """The ledger's four calls on one store's pool.

    Args:
        link: the store's pool.
        statements: the store's SQL.
        ready: opens the store lazily (or raises when it is closed).
        clock: the store's clock.
    """

    def __init__(
        self,
        link: Link,
        statements: Statements,
        ready: Callable[[], Awaitable[None]],
        clock: Callable[[], float],
    ) -> None:
        self._link = link
        self._sql = statements
        self._ready = ready
        self._clock = clock

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """The check-and-set of the ledger: ``True`` for the first caller only."""
        entry, until = ledger_entry(entry), check_until(until)
        await self._ready()
        async with self._link.connection() as db, db.transaction():
            now = self._clock()
            await db.execute(self._sql.ledger_prune, (now,))
            cursor = await db.execute(self._sql.ledger_spend, (entry, now, until, now))
            return await cursor.fetchone() is not None

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry``, so that it may be spent again."""
        entry = ledger_entry(entry)
        await self._ready()
        async with self._link.connection() as db:
            await db.execute(self._sql.ledger_refund, (entry,))

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now, replacing an earlier record; returns the time."""
        entry, until = ledger_entry(entry), check_until(until)
        await self._ready()
        async with self._link.connection() as db, db.transaction():
            now = self._clock()
            await db.execute(self._sql.ledger_prune, (now,))
            await db.execute(self._sql.ledger_record, (entry, now, until))
            return now

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, each with the time it was spent."""
        wanted = [entry for entry in check_entries(entries) if "\x00" not in entry]
        if not wanted:
            return {}
        await self._ready()
        async with self._link.connection() as db:
            cursor = await db.execute(self._sql.ledger_read, (wanted, self._clock()))
            rows = await cursor.fetchall()
        return {str(entry): float(spent_at) for entry, spent_at in rows}

"""The Redis store's spend-once ledger, as a part of the store.

Each entry is a key ``<prefix>:ledger:<entry>`` that expires with its entry
(:mod:`._ledger`); the spend is one script on the server, so exactly one caller among every
process on the server spends an entry while it has not expired.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

from redis.asyncio import Redis

from roomkit.stores._ledger import check_entries, check_entry, check_until
from roomkit.stores.redis import _ledger as ledger
from roomkit.stores.redis._link import guard

__all__ = ["Spending"]


class Spending:
    """The ledger's four calls on one store's client.

    Args:
        client: the store's client.
        prefix: the first part of the store's keys.
        where: the server, for error messages.
        ensure_open: opens the store lazily (or raises when it is closed).
        clock: the store's clock.
    """

    def __init__(
        self,
        client: Redis,
        prefix: str,
        where: str,
        ensure_open: Callable[[], Awaitable[None]],
        clock: Callable[[], float],
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._where = where
        self._ensure_open = ensure_open
        self._clock = clock
        self._spend = client.register_script(ledger.SPEND)

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """The check-and-set of the ledger: ``True`` for the first caller only."""
        entry, until = check_entry(entry), check_until(until)
        await self._ensure_open()
        now = self._clock()
        expiry = ledger.expiry_ms(until, now)
        args = [ledger.value(now, until), "" if expiry is None else expiry, repr(now)]
        with guard(self._where):
            won = await self._spend(keys=[ledger.entry_key(self._prefix, entry)], args=args)
        return bool(int(won))

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry``, so that it may be spent again."""
        key = ledger.entry_key(self._prefix, check_entry(entry))
        await self._ensure_open()
        with guard(self._where):
            await self._client.delete(key)

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now, replacing an earlier record; returns the time."""
        entry, until = check_entry(entry), check_until(until)
        await self._ensure_open()
        now = self._clock()
        key, expiry = ledger.entry_key(self._prefix, entry), ledger.expiry_ms(until, now)
        with guard(self._where):
            await self._client.set(key, ledger.value(now, until), px=expiry)
        return now

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, each with the time it was spent."""
        wanted = check_entries(entries)
        if not wanted:
            return {}
        await self._ensure_open()
        with guard(self._where):
            raw = await self._client.mget([ledger.entry_key(self._prefix, e) for e in wanted])
        now = self._clock()
        found: dict[str, float] = {}
        for entry, value in zip(wanted, raw, strict=True):
            spent_at = ledger.parse(value, now)
            if spent_at is not None:
                found[entry] = spent_at
        return found

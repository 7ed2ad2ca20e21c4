"""The Redis store's spend-once ledger, as a part of the store.

Each entry is a key ``<prefix>:ledger:<entry>`` that expires with its entry
(:mod:`._ledger`); the spend is one script on the server, so exactly one caller among every
process on the server spends an entry while it has not expired. The spend and the refund
carry a token (:mod:`._once`): sent again after their reply was lost, they find what they
did and do nothing more. So the store sends them again itself, with the same token, while
the server is away (up to its ``settle_retry``, as a settle): a spend that landed as the
server went down is reported won once it is back, not refused to the caller who made it.
Recording an entry writes the same when repeated.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from redis.commands.core import AsyncScript

from roomkit.stores._ledger import (
    REFUND_UNKNOWN,
    SPEND_UNKNOWN,
    check_entries,
    check_entry,
    check_until,
)
from roomkit.stores.redis import _ledger as ledger
from roomkit.stores.redis._link import guard
from roomkit.stores.redis._once import with_token
from roomkit.stores.redis._part import Part

__all__ = ["Spending"]


@dataclass(slots=True, eq=False)
class Spending(Part):
    """The ledger's four calls on one store's client."""

    ensure_open: Callable[[], Awaitable[None]]
    """Opens the store lazily (or raises when it is closed)."""
    clock: Callable[[], float]
    """The store's clock."""
    knowing: Callable[..., Awaitable[Any]]
    """Runs an attempt again while the server is away (the store's ``_settle_knowing``)."""
    _spend: AsyncScript = field(init=False)
    _refund: AsyncScript = field(init=False)

    def __post_init__(self) -> None:
        self._spend = self.client.register_script(ledger.SPEND)
        self._refund = self.client.register_script(ledger.REFUND)

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """The check-and-set of the ledger: ``True`` for the first caller only."""
        entry, until = check_entry(entry), check_until(until)
        await self.ensure_open()
        now = self.clock()
        expiry = ledger.expiry_ms(until, now)
        args = [ledger.value(now, until), "" if expiry is None else expiry, repr(now)]
        key = ledger.entry_key(self.layout.prefix, entry)
        keys, args = with_token(self.layout.prefix, [key], args, within=self.within)
        won = await self._once(self._spend, keys, args, f"the spend of {entry!r}", SPEND_UNKNOWN)
        return bool(int(won))

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry``, so that it may be spent again."""
        key = ledger.entry_key(self.layout.prefix, check_entry(entry))
        await self.ensure_open()
        keys, args = with_token(self.layout.prefix, [key], [], within=self.within)
        await self._once(self._refund, keys, args, f"the refund of {entry!r}", REFUND_UNKNOWN)

    async def _once(
        self, script: AsyncScript, keys: list[Any], args: list[Any], what: str, advice: str
    ) -> Any:
        """Run ``script`` with its token, again while the server is away; its reply."""

        async def attempt() -> Any:
            async with guard(self.where, within=self.within):
                return await script(keys=keys, args=args)

        return await self.knowing(attempt, what, self.where, what=what, advice=advice)

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now, replacing an earlier record; returns the time."""
        entry, until = check_entry(entry), check_until(until)
        await self.ensure_open()
        now = self.clock()
        key, expiry = ledger.entry_key(self.layout.prefix, entry), ledger.expiry_ms(until, now)
        async with guard(self.where, within=self.within):
            await self.client.set(key, ledger.value(now, until), px=expiry)
        return now

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, each with the time it was spent."""
        wanted = check_entries(entries)
        if not wanted:
            return {}
        await self.ensure_open()
        async with guard(self.where, within=self.within):
            raw = await self.client.mget([ledger.entry_key(self.layout.prefix, e) for e in wanted])
        now = self.clock()
        found: dict[str, float] = {}
        for entry, value in zip(wanted, raw, strict=True):
            spent_at = ledger.parse(value, now)
            if spent_at is not None:
                found[entry] = spent_at
        return found

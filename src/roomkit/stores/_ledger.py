"""The spend-once ledger: what the stores share, and the ledger of a store in memory.

A ledger entry is a short name (``link:<nonce>``, ``token:<nonce>``, ...) that someone has
spent, with the time it was spent and the time it may be forgotten, both on the store's
clock. :meth:`~roomkit.stores.SpendLedger.spend_once` is a check-and-set:
among every process sharing the store, only the first caller for an unexpired entry wins.
The functions below check an entry and an expiry the same way for every store;
:class:`MemoryLedger` is the ledger of a handler whose requests live in this process.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection

from roomkit._storable import unencodable_text
from roomkit.core.exceptions import InvalidTextError

__all__ = [
    "MAX_ENTRY_CHARS",
    "REFUND_UNKNOWN",
    "SPEND_UNKNOWN",
    "MemoryLedger",
    "check_entries",
    "check_entry",
    "check_until",
    "spent_time",
]

MAX_ENTRY_CHARS = 512
"""The longest entry a ledger takes."""

SPEND_UNKNOWN = "read the entry (read_spent) once the store is back: spent, it may be this spend"
"""What to do about a spend whose outcome stayed unknown through an outage."""

REFUND_UNKNOWN = "read the entry (read_spent) once the store is back before refunding it again"
"""What to do about a refund whose outcome stayed unknown through an outage."""

_PRUNE_AT = 1024
"""Entries the memory ledger holds before it looks for expired ones to forget."""


def spent_time(value: object) -> float:
    """The time a stored entry was spent, from what its store read; a value this library did
    not write (not a number, or NaN) reads as spent at the end of time: the ledger fails
    closed, a revocation by time included."""
    try:
        spent_at = float(value)  # type: ignore[arg-type]  # whatever the row held
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(spent_at) else spent_at


def check_entry(entry: object) -> str:
    """``entry`` as a ledger entry: a non-empty string of at most :data:`MAX_ENTRY_CHARS`.

    Raises:
        TypeError: ``entry`` is not a string.
        ValueError: it is empty or too long.
        InvalidTextError: it holds a lone surrogate, which no store can write.
    """
    if not isinstance(entry, str):
        raise TypeError(f"a ledger entry must be a str, got {type(entry).__name__}")
    if not entry or len(entry) > MAX_ENTRY_CHARS:
        raise ValueError(
            f"a ledger entry must be 1 to {MAX_ENTRY_CHARS} characters, got {len(entry)}"
        )
    problem = None if entry.isascii() else unencodable_text(entry)
    if problem is not None:
        raise InvalidTextError(f"a ledger entry cannot be stored: it holds {problem}")
    return entry


def check_entries(entries: Collection[str]) -> list[str]:
    """``entries`` checked one by one, without repeats, in order."""
    if isinstance(entries, str):
        raise TypeError("entries must be a collection of str, not one str")
    return [check_entry(entry) for entry in dict.fromkeys(entries)]


def check_until(until: object) -> float | None:
    """``until`` as an expiry: ``None`` (kept for good) or a finite time on the store's clock.

    Raises:
        TypeError: ``until`` is not a number.
        ValueError: it is NaN or infinite.
    """
    if until is None:
        return None
    if isinstance(until, bool) or not isinstance(until, int | float):
        raise TypeError(f"until must be a time in seconds or None, got {type(until).__name__}")
    if not math.isfinite(until):
        raise ValueError(f"until must be a finite time (or None to keep it), got {until!r}")
    return float(until)


class MemoryLedger:
    """A spend-once ledger in this process's memory, for a handler on the memory store.

    Each call is one step of the event loop, so :meth:`spend_once` is a check-and-set.

    Args:
        clock: the ledger's clock, in seconds since the epoch.
        forgets: says which unexpired entries the ledger may forget all the same when it
            looks for expired ones (the marks of requests its handler let go); none by
            default.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        forgets: Callable[[str], bool] | None = None,
    ) -> None:
        if not callable(clock):
            raise TypeError(f"clock must be callable, got {type(clock).__name__}")
        self.clock = clock
        """The ledger's clock: entries expire on it."""
        self._forgets = forgets
        self._entries: dict[str, tuple[float, float | None]] = {}
        # The size at which to look for expired entries next: twice what a look left, so
        # that a ledger of live entries is not scanned on every spend.
        self._prune_at = _PRUNE_AT

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """Spend ``entry`` until ``until``; ``True`` for the first caller only."""
        entry, until = check_entry(entry), check_until(until)
        now = self.clock()
        current = self._entries.get(entry)
        if current is not None and _alive(current[1], now):
            return False
        if len(self._entries) >= self._prune_at:
            self._prune(now)
        self._entries[entry] = (now, until)
        return True

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry``: it may be spent again."""
        self._entries.pop(check_entry(entry), None)

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now (again, if it was); returns the time recorded."""
        entry, until = check_entry(entry), check_until(until)
        now = self.clock()
        if len(self._entries) >= self._prune_at:
            self._prune(now)
        self._entries[entry] = (now, until)
        return now

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, with the time each was spent."""
        now = self.clock()
        found: dict[str, float] = {}
        for entry in check_entries(entries):
            current = self._entries.get(entry)
            if current is not None and _alive(current[1], now):
                found[entry] = current[0]
        return found

    def _prune(self, now: float) -> None:
        # An expired entry reads as absent anyway: it need not be kept.
        forgets = self._forgets
        for entry in [
            key
            for key, (_, until) in self._entries.items()
            if not _alive(until, now) or (forgets is not None and forgets(key))
        ]:
            del self._entries[entry]
        self._prune_at = max(_PRUNE_AT, 2 * len(self._entries))

    def __len__(self) -> int:
        return len(self._entries)


def _alive(until: float | None, now: float) -> bool:
    return until is None or until > now

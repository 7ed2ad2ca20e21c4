"""The SQLite store's spend-once ledger: one row per spent entry in ``roomkit_ledger``.

The spend is one ``INSERT ... ON CONFLICT`` inside the store's ``BEGIN IMMEDIATE`` write: the
row goes in when the entry is absent, replaces one that has expired, and leaves an unexpired
one alone, so exactly one caller among every process on the file sees it go in. Every write
drops the rows already expired on the store's clock (an index keeps that a probe when there
are none). A row this library did not write reads as spent at the end of time: the ledger
fails closed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import aiosqlite

from roomkit.stores._ledger import spent_time
from roomkit.stores.sqlite._link import fetch_all, query

__all__ = ["read", "record", "refund", "spend"]

_SPEND = (
    "INSERT INTO roomkit_ledger (entry, spent_at, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (entry) DO UPDATE SET spent_at = excluded.spent_at, "
    "expires_at = excluded.expires_at "
    "WHERE roomkit_ledger.expires_at IS NOT NULL AND roomkit_ledger.expires_at <= ? "
    "RETURNING entry"
)
"""Parameters: entry, spent_at, expires_at, now. A row comes back when this call spent it."""

_RECORD = (
    "INSERT INTO roomkit_ledger (entry, spent_at, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (entry) DO UPDATE SET spent_at = excluded.spent_at, "
    "expires_at = excluded.expires_at"
)
_REFUND = "DELETE FROM roomkit_ledger WHERE entry = ?"
_PRUNE = "DELETE FROM roomkit_ledger WHERE expires_at IS NOT NULL AND expires_at <= ?"
# Well under SQLite's smallest limit on bound parameters (999 before 3.32).
_CHUNK = 500


def spend(db: sqlite3.Connection, entry: str, until: float | None, now: float) -> bool:
    """Spend ``entry`` inside the running write; ``True`` when this call did."""
    db.execute(_PRUNE, (now,))
    return bool(query(db, _SPEND, (entry, now, until, now)))


def record(db: sqlite3.Connection, entry: str, until: float | None, now: float) -> None:
    """Record ``entry`` as spent at ``now`` inside the running write."""
    db.execute(_PRUNE, (now,))
    db.execute(_RECORD, (entry, now, until))


def refund(db: sqlite3.Connection, entry: str) -> None:
    """Forget ``entry`` inside the running write."""
    db.execute(_REFUND, (entry,))


async def read(db: aiosqlite.Connection, entries: Sequence[str], now: float) -> dict[str, float]:
    """The entries among ``entries`` unexpired at ``now``, with when each was spent."""
    found: dict[str, float] = {}
    for start in range(0, len(entries), _CHUNK):
        chunk = list(entries[start : start + _CHUNK])
        marks = ", ".join("?" for _ in chunk)
        statement = (
            f"SELECT entry, spent_at FROM roomkit_ledger WHERE entry IN ({marks}) "
            "AND (expires_at IS NULL OR expires_at > ?)"
        )
        rows: list[Any] = await fetch_all(db, statement, (*chunk, now))
        found.update((str(entry), spent_time(spent_at)) for entry, spent_at in rows)
    return found

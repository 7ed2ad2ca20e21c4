"""Where each store of a test lives, for the suites that hold on every store.

A :class:`StoreSite` is one place a deployment keeps its requests: the memory store, one
SQLite file in the test's folder, or a key prefix (Redis) or schema (PostgreSQL) of the
test's own on the session's server. Every store object opened on a site, in this process or
another, sees the same records, as the processes of one deployment do.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["DURABLE", "STORES", "Ahead", "StoreSite", "fresh_prefix", "open_store"]

STORES = ("memory", "sqlite", "redis", "postgres")
"""Every store: the suites that say "on every store" run once on each."""
DURABLE = STORES[1:]
"""The stores that keep their records outside the process."""


class Ahead:
    """A durable store's clock: the wall clock, moved ahead by the test."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead

    async def move(self, seconds: float) -> None:
        """Move the clock ``seconds`` ahead (as :func:`roomkit.testing.advance` is given)."""
        self.ahead += seconds


def fresh_prefix() -> str:
    """A Redis key prefix or PostgreSQL schema no other test uses."""
    return f"t{os.urandom(6).hex()}"


@dataclass(frozen=True)
class StoreSite:
    """One test's store: its kind, where it is, and its prefix or schema."""

    kind: str
    """``"memory"``, ``"sqlite"``, ``"redis"`` or ``"postgres"``."""
    url: str
    """``memory``, ``sqlite:///<path>``, the Redis URL or the PostgreSQL DSN."""
    prefix: str
    """The Redis key prefix or the PostgreSQL schema (unused by memory and SQLite)."""

    @property
    def durable(self) -> bool:
        """Whether the records live outside the process."""
        return self.kind != "memory"

    def open(self, **options: float) -> Any:
        """A new, unopened request store on this site; ``None`` for the memory store (a
        handler keeps its own)."""
        if not self.durable:
            return None
        return open_store(self.url, self.prefix, **options)


def open_store(url: str, prefix: str, **options: float) -> Any:
    """A durable store at ``url`` (``sqlite:///path``, ``redis://``, ``postgresql://``),
    under ``prefix`` (Redis) or in that schema (PostgreSQL), with short backstops."""
    if url.startswith("sqlite:///"):
        from roomkit.stores.sqlite import SQLiteStore

        options.setdefault("backstop_interval", 0.02)
        return SQLiteStore(url.removeprefix("sqlite:///"), **options)
    if url.startswith("redis://"):
        from roomkit.stores.redis import RedisStore

        options.setdefault("backstop_interval", 0.05)
        return RedisStore(url, prefix=prefix, **options)
    from roomkit.stores.postgres import PostgresStore

    options.setdefault("backstop_interval", 0.05)
    return PostgresStore(url, schema=prefix, **options)

"""How many writes a durable room store makes, counted by each back end's own means.

* SQLite: the statements the store's connection runs (its trace callback); a write is a
  transaction committed, or a statement that changes rows outside one (committed alone).
* PostgreSQL: the transaction ids the server hands out (each transaction that writes takes
  one; a read takes none), read on a connection of the test's own.
* Redis: the scripts the server ran (``INFO commandstats``): the store writes only by
  scripts, each one atomic write (a script that reads counts too; the commands a script
  runs are counted apart).

Each counts what the whole server (or the store's connection) did meanwhile, so a test counts
only while nothing else runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.core.room_stores import DurableRoomStore, Place

__all__ = ["Writes", "counting_writes"]

_READS = frozenset({"SELECT", "PRAGMA", "WITH"})
_SCRIPTS = ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro")


class Writes:
    """The writes counted, once the block that counts them ended."""

    def __init__(self) -> None:
        self.count = 0
        """The writes: transactions committed (SQL), or scripts run (Redis)."""
        self.commands: Counter[str] = Counter()
        """On Redis, the commands run, by name (a script's own commands among them)."""


@asynccontextmanager
async def counting_writes(place: Place, store: DurableRoomStore) -> AsyncIterator[Writes]:
    """Count the writes ``store`` (opened on ``place``) makes while the block runs."""
    writes = Writes()
    if place.kind == "sqlite":
        async with _sqlite(store, writes):
            yield writes
    elif place.kind == "postgres":
        async with _postgres(place, writes):
            yield writes
    else:
        async with _redis(place, writes):
            yield writes


@asynccontextmanager
async def _sqlite(store: Any, writes: Writes) -> AsyncIterator[None]:
    statements: list[str] = []
    db = store._db  # the store's one connection, where its writes run
    await db.set_trace_callback(statements.append)
    try:
        yield
    finally:
        await db.set_trace_callback(None)
    inside = False
    for statement in statements:
        word = statement.split(None, 1)[0].upper()
        if word == "BEGIN":
            inside = True
        elif word in ("COMMIT", "END"):
            inside = False
            writes.count += 1
        elif word == "ROLLBACK":
            inside = False
        elif not inside and word not in _READS:
            writes.count += 1


@asynccontextmanager
async def _postgres(place: Place, writes: Writes) -> AsyncIterator[None]:
    import psycopg

    dsn, _, _ = place.where.partition("#")
    next_xid = "SELECT txid_snapshot_xmax(txid_current_snapshot())"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as db:
        before = await (await db.execute(next_xid)).fetchone()
        yield
        after = await (await db.execute(next_xid)).fetchone()
    assert before is not None
    assert after is not None
    writes.count = int(after[0]) - int(before[0])


@asynccontextmanager
async def _redis(place: Place, writes: Writes) -> AsyncIterator[None]:
    from redis.asyncio import Redis

    url, _, _ = place.where.partition("#")
    client = Redis.from_url(url)
    try:
        before = await client.info("commandstats")
        yield
        after = await client.info("commandstats")
    finally:
        await client.aclose()
    for name, figures in after.items():
        command = name.removeprefix("cmdstat_")
        ran = int(figures["calls"]) - int(before.get(name, {}).get("calls", 0))
        if ran and command != "info":
            writes.commands[command] = ran
    writes.count = sum(writes.commands[script] for script in _SCRIPTS)

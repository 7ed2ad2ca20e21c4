"""The spend-once ledger, on every store: one winner per entry across store objects and
processes, refunds, records, expiry on the store's clock, pruning, and bad arguments."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.store_kit import (
    Backend,
    FakeClock,
    RedisBackend,
    SQLiteBackend,
)

from roomkit.stores import MemoryLedger, SpendLedger
from roomkit.tools.human_input import HumanInputHandler

SPEND_ELSEWHERE = """
import asyncio, sys

async def main(kind, where, prefix, entry):
    if kind == "sqlite":
        from roomkit.stores.sqlite import SQLiteStore
        store = SQLiteStore(where)
    else:
        from roomkit.stores.redis import RedisStore
        store = RedisStore(where, prefix=prefix)
    async with store:
        won = await store.spend_once(entry, until=None)
    sys.exit(0 if won else 3)

asyncio.run(main(*sys.argv[1:]))
"""
"""Run with ``kind location prefix entry``: spends the entry in a process of its own; exits 0
when that spend won."""


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def ledgers(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[tuple[SpendLedger, SpendLedger]]:
    """Two ledgers on one place (two store objects for a durable store; one memory ledger)."""
    if request.param == "memory":
        memory = MemoryLedger(clock=clock)
        yield memory, memory
        return
    backend: Backend
    if request.param == "sqlite":
        backend = SQLiteBackend(tmp_path / "ledger.db")
    else:
        url = request.getfixturevalue("redis_server").url
        backend = RedisBackend(url, request.getfixturevalue("prefix"))
    first, second = backend.make(clock=clock), backend.make(clock=clock)
    yield first, second
    await backend.close()


async def test_an_entry_is_spent_once_whoever_spends_it(
    ledgers: tuple[SpendLedger, SpendLedger], clock: FakeClock
) -> None:
    first, second = ledgers
    attempts = [
        ledger.spend_once("link:n1", until=clock.now + 60)
        for ledger in (first, second)
        for _ in range(10)
    ]
    won = await asyncio.gather(*attempts)
    assert won.count(True) == 1
    assert await second.read_spent(["link:n1", "link:n2"]) == {"link:n1": clock.now}


async def test_a_refund_makes_the_entry_spendable_again(
    ledgers: tuple[SpendLedger, SpendLedger], clock: FakeClock
) -> None:
    first, second = ledgers
    assert await first.spend_once("link:n1", until=clock.now + 60)
    await second.refund_spent("link:n1")
    assert await first.read_spent(["link:n1"]) == {}
    assert await second.spend_once("link:n1", until=clock.now + 60)
    assert not await first.spend_once("link:n1", until=clock.now + 60)


async def test_an_entry_expires_on_the_stores_clock(
    ledgers: tuple[SpendLedger, SpendLedger], clock: FakeClock
) -> None:
    first, second = ledgers
    assert await first.spend_once("link:n1", until=clock.now + 60)
    assert await first.spend_once("forever", until=None)
    clock.advance(59)
    assert not await second.spend_once("link:n1", until=clock.now + 60)
    clock.advance(1)
    assert await second.read_spent(["link:n1", "forever"]) == {"forever": clock.now - 60}
    assert await second.spend_once("link:n1", until=clock.now + 60)
    assert not await first.spend_once("forever", until=None)


async def test_a_record_moves_the_entrys_time_forward(
    ledgers: tuple[SpendLedger, SpendLedger], clock: FakeClock
) -> None:
    first, second = ledgers
    assert await first.record_spent("actor:bob", until=None) == clock.now
    clock.advance(10)
    assert await second.record_spent("actor:bob", until=None) == clock.now
    assert await first.read_spent(["actor:bob"]) == {"actor:bob": clock.now}
    assert not await first.spend_once("actor:bob", until=None)


@pytest.mark.parametrize(
    ("entry", "until", "error"),
    [
        ("", None, ValueError),
        ("x" * 513, None, ValueError),
        (3, None, TypeError),
        ("ok", float("nan"), ValueError),
        ("ok", float("inf"), ValueError),
        ("ok", "soon", TypeError),
        ("ok", True, TypeError),
    ],
)
async def test_bad_entries_and_expiries_are_refused_before_the_store(
    ledgers: tuple[SpendLedger, SpendLedger], entry: Any, until: Any, error: type[Exception]
) -> None:
    first, _ = ledgers
    with pytest.raises(error):
        await first.spend_once(entry, until=until)
    with pytest.raises(error):
        await first.record_spent(entry, until=until)
    with pytest.raises(TypeError):
        await first.read_spent("one string")  # type: ignore[arg-type]


async def test_a_sqlite_ledger_prunes_what_expired(tmp_path: Path, clock: FakeClock) -> None:
    backend = SQLiteBackend(tmp_path / "ledger.db")
    store = backend.make(clock=clock)
    try:
        await store.spend_once("old", until=clock.now + 1)
        clock.advance(2)
        await store.spend_once("new", until=clock.now + 60)
    finally:
        await backend.close()
    with closing(sqlite3.connect(backend.path)) as db:
        entries = {row[0] for row in db.execute("SELECT entry FROM roomkit_ledger")}
    assert entries == {"new"}


async def test_a_redis_ledger_entry_expires_on_the_server(
    redis_server: Any, prefix: str, raw: Redis, clock: FakeClock
) -> None:
    backend = RedisBackend(redis_server.url, prefix)
    store = backend.make(clock=clock)
    try:
        await store.spend_once("link:n1", until=clock.now + 60)
        await store.record_spent("actor:bob", until=None)
    finally:
        await backend.close()
    assert 0 < await raw.pttl(f"{prefix}:ledger:link:n1") <= 60_000
    assert await raw.pttl(f"{prefix}:ledger:actor:bob") == -1


@pytest.mark.parametrize("value", ["garbage", "nan -"])
async def test_a_redis_value_the_store_did_not_write_reads_as_spent(
    redis_server: Any, prefix: str, raw: Redis, value: str
) -> None:
    backend = RedisBackend(redis_server.url, prefix)
    store = backend.make()
    await raw.set(f"{prefix}:ledger:link:n1", value)
    try:
        assert await store.read_spent(["link:n1"]) == {"link:n1": math.inf}
        assert not await store.spend_once("link:n1", until=None)
    finally:
        await backend.close()


@pytest.mark.parametrize("spent_at", ["garbage", "nan"])
async def test_a_sqlite_value_the_store_did_not_write_reads_as_spent(
    tmp_path: Path, spent_at: str
) -> None:
    """As on Redis: a row the ledger cannot read is spent at the end of time (it fails
    closed, for a revocation by time too), rather than failing every check that reads it."""
    backend = SQLiteBackend(tmp_path / "ledger.db")
    store = backend.make()
    try:
        await store.record_spent("link:n1", until=None)
        with closing(sqlite3.connect(backend.path)) as db, db:
            db.execute("UPDATE roomkit_ledger SET spent_at = ?", (spent_at,))
        assert await store.read_spent(["link:n1"]) == {"link:n1": math.inf}
        assert not await store.spend_once("link:n1", until=None)
    finally:
        await backend.close()


async def test_a_postgres_nan_reads_as_spent(postgres_server: Any) -> None:
    """A NaN time (which the column takes) would let every revocation by time through: it
    reads as spent at the end of time, as any value this library did not write."""
    import psycopg
    from tests.tools.human_input.stores.postgres_kit import PostgresBackend

    backend = PostgresBackend(postgres_server.dsn)
    store = backend.make()
    try:
        await store.record_spent("actor:bob", until=None)
        async with await psycopg.AsyncConnection.connect(postgres_server.dsn) as db:
            table = f'"{backend.schema}".roomkit_ledger'
            await db.execute(f"UPDATE {table} SET spent_at = 'NaN'")  # type: ignore[arg-type]
            await db.commit()
        assert await store.read_spent(["actor:bob"]) == {"actor:bob": math.inf}
    finally:
        await backend.close()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_one_spend_wins_across_processes(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend: Backend
    if kind == "sqlite":
        backend = SQLiteBackend(tmp_path / "ledger.db")
    else:
        url = request.getfixturevalue("redis_server").url
        backend = RedisBackend(url, request.getfixturevalue("prefix"))
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", SPEND_ELSEWHERE, *backend.elsewhere, "link:shared"
        )
        for _ in range(4)
    ]
    codes = [await process.wait() for process in processes]
    await backend.close()
    assert sorted(codes) == [0, 3, 3, 3]


async def test_the_handler_exposes_its_stores_ledger(tmp_path: Path) -> None:
    from roomkit.stores.sqlite import SQLiteStore

    async with SQLiteStore(tmp_path / "ledger.db") as store:
        assert HumanInputHandler(store=store).ledger is store
    assert isinstance(HumanInputHandler().ledger, MemoryLedger)

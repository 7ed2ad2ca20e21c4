"""What the store tests share: a fake clock, a recording listener, requests to store, and a
:class:`Backend` per durable store that makes stores on one file or server and looks at what
they wrote there."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Protocol

from redis.asyncio import Redis

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import PendingChange, PendingChangeKind
from roomkit.stores._records import FIELDS, FORMAT, NONE
from roomkit.stores.postgres import PostgresStore
from roomkit.stores.redis import RedisStore
from roomkit.stores.sqlite import SQLiteStore

RESOLVED = PendingInputStatus.RESOLVED
REJECTED = PendingInputStatus.REJECTED
TIMED_OUT = PendingInputStatus.TIMED_OUT
PENDING = PendingInputStatus.PENDING
CREATED = PendingChangeKind.CREATED
SETTLED = PendingChangeKind.SETTLED
RESYNC = PendingChange(PendingChangeKind.RESYNC)

PATIENCE = 30.0
"""Seconds a test waits for something a store's real-time feed should deliver."""


def connection_threads() -> set[threading.Thread]:
    """The threads of SQLite connections (aiosqlite's workers) running now."""
    return {t for t in threading.enumerate() if "_connection_worker_thread" in t.name}


def still_running(before: set[threading.Thread]) -> set[threading.Thread]:
    """The connection threads started since ``before`` that do not end.

    A closed connection's thread hands the close back just before it ends: each new one
    gets a moment to end.
    """
    new = connection_threads() - before
    for thread in new:
        thread.join(timeout=PATIENCE)
    return {thread for thread in new if thread.is_alive()}


Store = SQLiteStore | RedisStore | PostgresStore


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Changes:
    """A listener that records changes and lets a test await the one it names."""

    def __init__(self) -> None:
        self.seen: list[PendingChange] = []
        self._waits: list[tuple[PendingChange, asyncio.Event]] = []

    def __call__(self, change: PendingChange) -> None:
        self.seen.append(change)
        for expected, event in self._waits:
            if change == expected:
                event.set()

    async def arrival(self, expected: PendingChange, *, after: int = 0) -> None:
        """Wait until ``expected`` is seen at or after position ``after``."""
        if expected in self.seen[after:]:
            return
        event = asyncio.Event()
        self._waits.append((expected, event))
        async with asyncio.timeout(PATIENCE):
            await event.wait()


@contextmanager
def logged(logger: str, text: str, *, level: int = logging.WARNING) -> Iterator[asyncio.Event]:
    """An event set once ``logger`` reports a record at ``level`` (or worse) that mentions
    ``text``; the logger lets such records through meanwhile."""
    seen = asyncio.Event()

    class Sentinel(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if text in record.getMessage():
                seen.set()

    sentinel = Sentinel(level)
    watched = logging.getLogger(logger)
    before = watched.level
    if not watched.isEnabledFor(level):
        watched.setLevel(level)
    watched.addHandler(sentinel)
    try:
        yield seen
    finally:
        watched.removeHandler(sentinel)
        watched.setLevel(before)


_ids: Iterator[int] = iter(range(1_000_000))


def make_request(**overrides: Any) -> PendingInput:
    values: dict[str, Any] = {
        "pending_id": f"p{next(_ids)}",
        "tool_name": "AskUserQuestion",
        "arguments": {"question": "Colour?"},
        "room_id": "room-1",
        "tool_call_id": "call-1",
        "channel_id": "ai-1",
    }
    values.update(overrides)
    return PendingInput(**values)


def public_fields(record: PendingInput) -> dict[str, Any]:
    return {
        field.name: getattr(record, field.name)
        for field in dataclasses.fields(record)
        if not field.name.startswith("_")
    }


def ids(records: list[PendingInput]) -> list[str]:
    return [record.pending_id for record in records]


# A record the store did not write: pending, in room-1, with the id "alien".
FOREIGN: dict[str, str | int | None] = {
    "format": FORMAT,
    "pending_id": "alien",
    "tool_name": "t",
    "arguments": "{}",
    "room_id": "room-1",
    "tool_call_id": "",
    "channel_id": "",
    "status": "pending",
    "detached": 0,
    "created_at": "2024-01-01T00:00:00+00:00",
    "channel_type": "ai",
    "withdrawn": 0,
}


def sqlite_insert_raw(path: Path, **overrides: object) -> None:
    """Write the foreign record, changed by ``overrides``, straight into the file."""
    values: dict[str, object] = {**dict.fromkeys(FIELDS), **FOREIGN, **overrides}
    columns = ", ".join(f'"{name}"' for name in values)
    marks = ", ".join("?" for _ in values)
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            f"INSERT INTO roomkit_pending ({columns}, seq) VALUES ({marks}, 0)",
            list(values.values()),
        )


def sqlite_stored_ids(path: Path) -> set[str]:
    """Every id in the file, retained or not."""
    with closing(sqlite3.connect(path)) as db:
        return {row[0] for row in db.execute("SELECT pending_id FROM roomkit_pending")}


async def redis_write_foreign(raw: Redis, prefix: str, **overrides: str) -> None:
    """Write the foreign record, changed by ``overrides``, as a hash listed as pending."""
    fields = {name: str(value) for name, value in FOREIGN.items()}
    fields |= {"deadline": NONE, **overrides}
    await raw.hset(f"{prefix}:p:alien", mapping=fields)  # type: ignore[misc]
    await raw.zadd(f"{prefix}:pending", {"alien": 0})
    await raw.zadd(f"{prefix}:r:room-1", {"alien": 0})


OPEN_ELSEWHERE = """
def open_store(kind, where, prefix):
    if kind == "sqlite":
        from roomkit.stores.sqlite import SQLiteStore
        return SQLiteStore(where)
    if kind == "postgres":
        from roomkit.stores.postgres import PostgresStore
        return PostgresStore(where, schema=prefix)
    from roomkit.stores.redis import RedisStore
    return RedisStore(where, prefix=prefix)
"""
"""Defines ``open_store(kind, location, prefix)`` in a script a subprocess runs: the store
a :class:`Backend`'s ``elsewhere`` names."""

SETTLE_ELSEWHERE = (
    OPEN_ELSEWHERE
    + """
import asyncio, sys
from roomkit.models.pending_input import PendingInputStatus

async def main(kind, where, prefix, pending_id):
    async with open_store(kind, where, prefix) as store:
        won = await store.settle(
            pending_id, PendingInputStatus.RESOLVED, result="from afar", settled_by="carol"
        )
    sys.exit(0 if won is not None else 3)

asyncio.run(main(*sys.argv[1:]))
"""
)
"""Run with ``kind location prefix pending_id``: settles the request as carol, in a process
of its own; exits 0 when that settle won."""


class Backend(Protocol):
    """Where the stores of one contract test keep their records, and how to look there."""

    kind: str
    logger: str
    """The logger the store reports skipped records and failing listeners on."""
    repeats_own_writes: bool
    """Whether the feed reports this store's own writes again after it announced them."""
    elsewhere: list[str]
    """How the settling subprocess finds the store: kind, location, prefix."""

    def make(self, **options: Any) -> Store:
        """A new, unopened store on the shared file or server; closed at the end."""

    async def live(self, changes: Changes) -> None:
        """Return once a listener subscribed with ``changes`` hears what comes next."""

    async def write_foreign(self, **overrides: str) -> None:
        """Store a record with the id ``alien`` that the store did not write."""

    async def stored_ids(self) -> set[str]:
        """The ids of every record still kept, hidden by the retention or not."""

    async def stored_status(self, pending_id: str) -> str | None:
        """The status a record holds, read without the store."""

    async def close(self) -> None:
        """Close every store :meth:`make` made."""


class SQLiteBackend:
    kind = "sqlite"
    logger = "roomkit.tools.human_input.stores.sqlite"
    repeats_own_writes = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.elsewhere = [self.kind, str(path), ""]
        self._made: list[Store] = []

    def make(self, **options: Any) -> Store:
        store = SQLiteStore(self.path, **options)
        self._made.append(store)
        return store

    async def live(self, changes: Changes) -> None:
        """A subscription counts from the change counter it starts at: live at once."""

    async def write_foreign(self, **overrides: str) -> None:
        sqlite_insert_raw(self.path, **overrides)

    async def stored_ids(self) -> set[str]:
        return sqlite_stored_ids(self.path)

    async def stored_status(self, pending_id: str) -> str | None:
        with closing(sqlite3.connect(self.path)) as db:
            row = db.execute(
                "SELECT status FROM roomkit_pending WHERE pending_id = ?", (pending_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    async def close(self) -> None:
        for store in self._made:
            await store.close()


class RedisBackend:
    kind = "redis"
    logger = "roomkit.tools.human_input.stores.redis"
    repeats_own_writes = True

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self.elsewhere = [self.kind, url, prefix]
        self.raw = Redis.from_url(url, decode_responses=True)
        self._made: list[Store] = []

    def make(self, **options: Any) -> Store:
        store = RedisStore(self.url, prefix=self.prefix, **options)
        self._made.append(store)
        return store

    async def live(self, changes: Changes) -> None:
        """Pub/sub keeps nothing for a subscriber that is not there yet: wait for it."""
        await changes.arrival(RESYNC)

    async def write_foreign(self, **overrides: str) -> None:
        await redis_write_foreign(self.raw, self.prefix, **overrides)

    async def stored_ids(self) -> set[str]:
        records = f"{self.prefix}:p:"
        return {key.removeprefix(records) async for key in self.raw.scan_iter(records + "*")}

    async def stored_status(self, pending_id: str) -> str | None:
        status: str | None = await self.raw.hget(f"{self.prefix}:p:{pending_id}", "status")  # type: ignore[misc]
        return status

    async def close(self) -> None:
        for store in self._made:
            await store.close()
        await self.raw.aclose()

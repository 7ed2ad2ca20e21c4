"""Where the trail tests keep a trail, and the hand that edits it there: each store's rows,
heads and checkpoints, read and written directly (in the file, on the server, or in the
memory of the handler), the way a person with write access to the database would.

Every place is filled alike (:func:`fill`): an approval ``A`` edited and approved, a question
``B`` answered, checkpoint #0 taken after ``A``'s first two entries and #1 at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psycopg
import redis

from roomkit import HumanInputHandler
from roomkit.models.pending_input import PendingInput
from roomkit.stores import AuditKeys, CarriedTrail, MemoryStore, StoreTrail, Trail, new_entry
from roomkit.stores._trail import Checkpoint, Head
from roomkit.tools.approvals import edit

KEY = "trail-test-key-0123456789abcdef"
KEYS = AuditKeys([KEY])
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
TRAIL_DB = 12
"""The Redis database these tests use alone: the CLI's store has the default key prefix."""

Rows = list[tuple[int, str]]


@dataclass
class Filled:
    """The requests :func:`fill` made."""

    approval: str
    question: str


class Place(Protocol):
    """A store's trail, and a hand on what it stores."""

    kind: str
    url: str
    """What ``roomkit audit --store`` is given (``memory`` for the memory store)."""

    def open(self) -> Any:
        """A store of this place (an ``async with`` one), or the handler's memory."""
        ...

    def rows(self, pending_id: str) -> Rows: ...

    def set_rows(self, pending_id: str, rows: Rows) -> None:
        """Store exactly ``rows`` as the request's entries (seq as given where there is one)."""
        ...

    def head(self, pending_id: str) -> Head | None: ...

    def set_head(self, pending_id: str, head: Head | None) -> None: ...

    def checkpoints(self) -> list[Checkpoint]: ...

    def set_checkpoints(self, checkpoints: list[Checkpoint]) -> None: ...


async def _fill_with(handler: HumanInputHandler, trail: StoreTrail) -> Filled:
    held = await handler.create_approval(
        "pay", {"a": 1}, approvers=["alice"], tool_schema=SCHEMA, room_id="r1"
    )
    await handler.record(held.pending_id, new_entry("shown", surface="desk"))
    assert (await trail.checkpoint()).checkpoint is not None
    assert await handler.aresolve(held.pending_id, edit({"a": 2}), by="alice")
    asked = await handler.create("Ask", {"question": "?"}, room_id="r2")
    assert await handler.aresolve(asked.pending_id, "yes", by="bob")
    assert (await trail.checkpoint()).checkpoint is not None
    return Filled(held.pending_id, asked.pending_id)


def fill(place: Place) -> Filled:
    """Fill ``place`` (see the module docstring), signing with :data:`KEYS`."""
    if isinstance(place, MemoryPlace):
        return asyncio.run(_fill_with(place.handler, place.trail))

    async def work() -> Filled:
        async with place.open() as store:
            store.trail.use_keys(KEYS)
            return await _fill_with(HumanInputHandler(store=store), store.trail)

    return asyncio.run(work())


def read_trail(place: Place, keys: AuditKeys | None = KEYS) -> Trail:
    """The trail as the store reads it back."""
    if isinstance(place, MemoryPlace):
        return asyncio.run(place.trail.read())

    async def work() -> Trail:
        async with place.open() as store:
            store.trail.use_keys(keys)
            trail: Trail = await store.trail.read()
            return trail

    return asyncio.run(work())


class SQLPlace:
    """What SQLite and PostgreSQL share: the same tables, touched through DB-API."""

    kind: str
    url: str
    mark: str
    """The parameter mark of the database's driver."""

    def _db(self) -> Any:
        raise NotImplementedError

    def _rows(self, statement: str, parameters: tuple[Any, ...] = ()) -> list[Any]:
        with self._db() as db:
            return list(db.execute(statement.replace("?", self.mark), parameters).fetchall())

    def _write(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        with self._db() as db:
            for parameters in rows:
                db.execute(statement.replace("?", self.mark), parameters)

    def rows(self, pending_id: str) -> Rows:
        query = "SELECT seq, entry FROM roomkit_history WHERE pending_id = ? ORDER BY seq"
        return [(int(seq), str(text)) for seq, text in self._rows(query, (pending_id,))]

    def set_rows(self, pending_id: str, rows: Rows) -> None:
        self._write("DELETE FROM roomkit_history WHERE pending_id = ?", [(pending_id,)])
        self._write(
            "INSERT INTO roomkit_history (pending_id, seq, entry) VALUES (?, ?, ?)",
            [(pending_id, seq, text) for seq, text in rows],
        )

    def head(self, pending_id: str) -> Head | None:
        query = "SELECT length, head, epoch, mac FROM roomkit_chains WHERE pending_id = ?"
        found = self._rows(query, (pending_id,))
        return Head(*found[0]) if found else None

    def set_head(self, pending_id: str, head: Head | None) -> None:
        if head is None:
            self._write("DELETE FROM roomkit_chains WHERE pending_id = ?", [(pending_id,)])
            return
        self._write(
            "UPDATE roomkit_chains SET length = ?, head = ?, epoch = ?, mac = ? "
            "WHERE pending_id = ?",
            [(*head, pending_id)],
        )

    def checkpoints(self) -> list[Checkpoint]:
        query = "SELECT n, body, mac FROM roomkit_checkpoints ORDER BY n"
        return [Checkpoint(*row) for row in self._rows(query)]

    def set_checkpoints(self, checkpoints: list[Checkpoint]) -> None:
        self._write("DELETE FROM roomkit_checkpoints", [()])
        self._write(
            "INSERT INTO roomkit_checkpoints (n, body, mac) VALUES (?, ?, ?)",
            [tuple(checkpoint) for checkpoint in checkpoints],
        )


class SQLitePlace(SQLPlace):
    kind = "sqlite"
    mark = "?"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"

    def open(self) -> Any:
        from roomkit.stores.sqlite import SQLiteStore

        return SQLiteStore(self.path)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path)) as db, db:
            yield db


class PostgresPlace(SQLPlace):
    kind = "postgres"
    mark = "%s"

    def __init__(self, dsn: str) -> None:
        self.url = dsn

    def open(self) -> Any:
        from roomkit.stores.postgres import PostgresStore

        return PostgresStore(self.url)

    @contextmanager
    def _db(self) -> Iterator[psycopg.Connection[Any]]:
        with psycopg.connect(self.url) as db, db.transaction():
            yield db


class RedisPlace:
    kind = "redis"

    def __init__(self, url: str) -> None:
        self.url = url

    def open(self) -> Any:
        from roomkit.stores.redis import RedisStore

        return RedisStore(self.url)

    @contextmanager
    def _db(self) -> Iterator[redis.Redis]:
        with closing(redis.Redis.from_url(self.url, decode_responses=True)) as db:
            yield db

    def rows(self, pending_id: str) -> Rows:
        with self._db() as db:
            return list(enumerate(db.lrange(f"roomkit:h:{pending_id}", 0, -1)))  # type: ignore[arg-type]

    def set_rows(self, pending_id: str, rows: Rows) -> None:
        key = f"roomkit:h:{pending_id}"
        with self._db() as db:
            db.delete(key)
            if rows:
                db.rpush(key, *[text for _, text in rows])

    def head(self, pending_id: str) -> Head | None:
        with self._db() as db:
            value = db.hget(f"roomkit:ha:{pending_id}", "v")
        return None if value is None else Head(*json.loads(str(value)))

    def set_head(self, pending_id: str, head: Head | None) -> None:
        key = f"roomkit:ha:{pending_id}"
        with self._db() as db:
            if head is None:
                db.delete(key)
            else:
                db.hset(key, "v", json.dumps(list(head)))

    def checkpoints(self) -> list[Checkpoint]:
        with self._db() as db:
            return [Checkpoint(*json.loads(item)) for item in db.lrange("roomkit:cp", 0, -1)]  # type: ignore[union-attr]

    def set_checkpoints(self, checkpoints: list[Checkpoint]) -> None:
        with self._db() as db:
            db.delete("roomkit:cp")
            if checkpoints:
                db.rpush("roomkit:cp", *[json.dumps(list(item)) for item in checkpoints])


@dataclass
class MemoryPlace:
    """The histories a handler on the memory store keeps, edited in its memory: each on its
    request (``_history``), the heads and counts in the handler's trail."""

    kind: str = "memory"
    url: str = "memory"
    handler: HumanInputHandler = field(default_factory=HumanInputHandler)

    def __post_init__(self) -> None:
        trail = self.handler.audit_trail
        assert isinstance(trail, CarriedTrail)
        trail.use_keys(KEYS)
        self.trail = trail

    def open(self) -> Any:
        raise NotImplementedError("the memory store lives in its handler")

    def _request(self, pending_id: str) -> PendingInput:
        store = self.handler.store
        assert isinstance(store, MemoryStore)
        request = store.recall(pending_id)
        assert request is not None
        return request

    def rows(self, pending_id: str) -> Rows:
        asyncio.run(self.trail.read())  # links what the handler recorded since
        chain = self._request(pending_id)._history or ()
        return [(seq, str(text)) for seq, text in enumerate(chain)]

    def set_rows(self, pending_id: str, rows: Rows) -> None:
        self._request(pending_id)._history = tuple(text for _, text in rows) or None

    def head(self, pending_id: str) -> Head | None:
        return self.trail._heads.get(pending_id)

    def set_head(self, pending_id: str, head: Head | None) -> None:
        if head is None:
            self.trail._heads.pop(pending_id, None)
            self.trail._lengths.pop(pending_id, None)
        else:
            self.trail._heads[pending_id] = head
            self.trail._lengths[pending_id] = head.length

    def checkpoints(self) -> list[Checkpoint]:
        return list(self.trail.checkpoints)

    def set_checkpoints(self, checkpoints: list[Checkpoint]) -> None:
        self.trail.checkpoints[:] = checkpoints


async def answered_by_bob(store: Any) -> list[str]:
    """Two questions asked on ``store`` and answered by bob; their ids."""
    handler = HumanInputHandler(store=store)
    done = []
    for answer in ("yes", "no"):
        asked = await handler.create("Ask", {"question": "?"})
        assert await handler.aresolve(asked.pending_id, answer, by="bob")
        done.append(asked.pending_id)
    return done


def postgres_database(dsn: str) -> str:
    """A database of its own on the server of ``dsn`` (the CLI's store uses its default
    schema); its DSN."""
    name = f"trail{os.urandom(4).hex()}"
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    return dsn.rsplit("/", 1)[0] + f"/{name}"

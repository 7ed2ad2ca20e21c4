"""The SQLite store's standing grants: the table ``roomkit_grants`` in the store's file.

The grants keep a connection of their own to the file, as the outbox does. A use is one
``UPDATE ... WHERE`` (unrevoked, unexpired at the store's now, not used up) ``RETURNING``
inside ``BEGIN IMMEDIATE``: SQLite's write lock makes it a check-and-set among every process
on the file.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.grants import (
    COLUMNS,
    LIST_LIMIT,
    Grant,
    check_grant_id,
    grant_from_row,
)

__all__ = ["SQLiteGrants"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS roomkit_grants (
    grant_id TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    expires_at REAL NOT NULL,
    max_uses INTEGER,
    uses INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    revoked_at REAL,
    revoked_by TEXT,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS roomkit_grants_tool ON roomkit_grants (tool, expires_at);
"""

_LIVE = "revoked_at IS NULL AND expires_at > ? AND (max_uses IS NULL OR uses < max_uses)"


class SQLiteGrants:
    """The grants in a SQLite store's file (see :mod:`~roomkit.stores.grants`)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.path: str = store.path
        self.busy_timeout: float = max(float(store.busy_timeout), 5.0)
        self._db: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()

    def clock(self) -> float:
        """The store's clock: grants expire on it."""
        return float(self._store.clock())

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    async def _run(self, work: Any, *args: Any, write: bool = True) -> Any:
        """Run ``work`` on the connection in a thread: a change inside ``BEGIN IMMEDIATE``
        (the file's write lock), a read as it is."""
        self._store._check_open()  # refused, as the store's own calls, once it is closed
        async with self._lock:
            try:
                if not write:
                    return await asyncio.to_thread(self._read, work, *args)
                return await asyncio.to_thread(self._in_transaction, work, *args)
            except sqlite3.Error as error:
                if self._db is not None:
                    self._db.close()
                    self._db = None
                raise StoreUnavailableError(
                    f"The grants in {self.path!r} cannot be read or written ({error}): check "
                    "that the file is writable and the disk not full"
                ) from error

    def _read(self, work: Any, *args: Any) -> Any:
        return work(self._connect(), *args)

    def _in_transaction(self, work: Any, *args: Any) -> Any:
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            result = work(db, *args)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return result

    async def add(self, grant: Grant) -> Grant:
        now = float(self.clock())
        row = (grant.grant_id, grant.tool, grant.expires_at, grant.max_uses, grant.uses, now)

        def add(db: sqlite3.Connection) -> None:
            try:
                db.execute(
                    "INSERT INTO roomkit_grants (grant_id, tool, expires_at, max_uses, uses, "
                    "created_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*row, grant.body()),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"grant {grant.grant_id!r} is recorded already") from None

        await self._run(add)
        return grant_from_row((*row, None, None, grant.body()))

    async def get(self, grant_id: str) -> Grant | None:
        check_grant_id(grant_id)

        def read(db: sqlite3.Connection) -> Any:
            return db.execute(
                f"SELECT {COLUMNS} FROM roomkit_grants WHERE grant_id = ?", (grant_id,)
            ).fetchone()

        row = await self._run(read, write=False)
        return None if row is None else grant_from_row(row)

    async def list(self, *, tool: str | None = None, live: bool = False) -> list[Grant]:
        where: list[str] = []
        parameters: list[Any] = []
        if tool is not None:
            where.append("tool = ?")
            parameters.append(tool)
        if live:
            where.append(_LIVE)
            parameters.append(float(self.clock()))
        clause = f" WHERE {' AND '.join(where)}" if where else ""

        def read(db: sqlite3.Connection) -> list[Any]:
            return db.execute(
                f"SELECT {COLUMNS} FROM roomkit_grants{clause} "
                f"ORDER BY created_at DESC, grant_id LIMIT {LIST_LIMIT}",
                parameters,
            ).fetchall()

        return [grant_from_row(row) for row in await self._run(read, write=False)]

    async def revoke(self, grant_id: str, *, by: str | None = None) -> bool:
        check_grant_id(grant_id)
        now = float(self.clock())

        def revoke(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "UPDATE roomkit_grants SET revoked_at = ?, revoked_by = ? "
                "WHERE grant_id = ? AND revoked_at IS NULL",
                (now, by, grant_id),
            )
            return cursor.rowcount > 0

        return bool(await self._run(revoke))

    async def use(self, grant_id: str) -> Grant | None:
        check_grant_id(grant_id)
        now = float(self.clock())

        def use(db: sqlite3.Connection) -> Any:
            return db.execute(
                f"UPDATE roomkit_grants SET uses = uses + 1 WHERE grant_id = ? AND {_LIVE} "
                f"RETURNING {COLUMNS}",
                (grant_id, now),
            ).fetchone()

        row = await self._run(use)
        return None if row is None else grant_from_row(row)

    async def aclose(self) -> None:
        async with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

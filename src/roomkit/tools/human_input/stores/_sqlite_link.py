"""The SQLite store's one connection: opened on first use, used by one block at a time.

aiosqlite runs a connection's statements on a thread of its own, in the order they were
queued. A transaction spans several statements, so the link lets one block at a time use
the connection; a second coroutine waits for the first one's COMMIT or ROLLBACK instead of
slipping a statement into its transaction. SQLite's own faults (locks held past the busy
timeout, I/O errors, a file that cannot be opened or is not a database) leave as
:class:`~roomkit.core.exceptions.StoreUnavailableError`, and any fault but a lock drops the
connection so that the next use opens a fresh one.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import aiosqlite

from roomkit.core._sqlite_connect import retry_locked
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.tools.human_input.stores._sqlite_schema import READ_SEQ, SCHEMA

__all__ = ["Link", "fetch_all"]

_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


class Link:
    """A lazily opened connection with a lock around each use.

    Args:
        path: the database file.
        busy_timeout: seconds SQLite waits for another connection's lock.
        on_open: called after each (re)connect with the current change counter.
    """

    def __init__(self, path: str, *, busy_timeout: float, on_open: Callable[[int], None]) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._on_open = on_open
        self._db: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        self.dirty = False
        """A transaction ended abnormally: it may or may not have committed."""

    @asynccontextmanager
    async def session(self) -> AsyncIterator[aiosqlite.Connection]:
        """Hold the connection, opening it if needed; SQLite faults become store errors."""
        async with self._lock:
            try:
                yield await self._connect()
            except sqlite3.DatabaseError as error:
                if not _unreachable(error):
                    raise
                if getattr(error, "sqlite_errorcode", 0) & 0xFF not in _BUSY:
                    # The connection may be broken (an I/O error, a file gone): start afresh.
                    await self._disconnect()
                raise self._unavailable(error) from error

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction, committed when the block ends normally."""
        async with self.session() as db:
            await db.execute_fetchall("BEGIN IMMEDIATE")
            try:
                yield db
                await db.execute_fetchall("COMMIT")
            except BaseException:
                # A COMMIT cut short by a cancellation may still have landed.
                self.dirty = True
                with suppress(sqlite3.Error):
                    await db.execute_fetchall("ROLLBACK")
                raise

    async def close(self) -> None:
        """Close the connection, once no block uses it; idempotent."""
        async with self._lock:
            await self._disconnect()

    async def _connect(self) -> aiosqlite.Connection:
        if self._db is not None:
            return self._db
        db = await aiosqlite.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            await retry_locked(
                lambda: db.executescript(SCHEMA),
                self.busy_timeout,
                undo=lambda: db.execute_fetchall("ROLLBACK"),
            )
            ((counter,),) = await fetch_all(db, READ_SEQ)
        except BaseException:
            await _close_quietly(db)
            raise
        self._db = db
        self._on_open(counter)
        return db

    async def _disconnect(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            await _close_quietly(db)

    def _unavailable(self, error: sqlite3.Error) -> StoreUnavailableError:
        name = os.path.basename(self.path)
        return StoreUnavailableError(
            f"SQLite store {self.path!r} is unavailable ({error}): check that the path is "
            f"right, that its directory exists and is writable (SQLite creates {name}-wal "
            f"and {name}-shm beside it), that the file is a SQLite database, and that no "
            f"other process holds a lock on it for longer than busy_timeout "
            f"({self.busy_timeout:g} s)"
        )


async def fetch_all(
    db: aiosqlite.Connection, statement: str, parameters: Sequence[Any] = ()
) -> list[Any]:
    """Run one statement and return every row it yields (one trip to the connection's thread)."""
    return list(await db.execute_fetchall(statement, parameters))


def _unreachable(error: sqlite3.DatabaseError) -> bool:
    # Locks, I/O, a missing or foreign file; constraint and programming errors are bugs.
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError


async def _close_quietly(db: aiosqlite.Connection) -> None:
    # The connection is being given up: a failure to close it cleanly changes nothing.
    with suppress(sqlite3.Error, ValueError):
        await db.close()

"""The SQLite store's one connection: opened on first use, used by one block at a time.

aiosqlite runs a connection's statements on a thread of its own, in the order they were
queued: reads go that way. A write transaction runs whole on a thread of the link's own
instead (:mod:`~roomkit.stores.sqlite._worker`; the connection is not bound to a thread), so
that its BEGIN, its statements and its COMMIT cost one trip to that thread and back, not one
each. The link lets one block at a time
use the connection; a second coroutine waits for the first one's COMMIT or ROLLBACK
instead of slipping a statement into its transaction. SQLite's own faults (locks held past the busy
timeout, I/O errors, a file that cannot be opened or is not a database) leave as
:class:`~roomkit.core.exceptions.StoreUnavailableError`, and any fault but a lock drops the
connection so that the next use opens a fresh one.

A database file, ``-wal`` or ``-shm`` deleted or replaced under the connection (see
:class:`~roomkit.stores.sqlite._connect.FileWatch`) is looked for before each COMMIT and after
it, and at most every 50 ms when a block starts. Before the COMMIT, the transaction is
rolled back and refused; what the connection's log held is copied into the database file
first, and the connection dropped (a read refused when its block starts has lost nothing).
A file that moved during the COMMIT itself is handled the same way, except that a commit
whose log could be copied in full is durable, and so acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, NoReturn, TypeVar
from urllib.request import pathname2url

import aiosqlite

from roomkit.core.exceptions import (
    StoreNotFoundError,
    StoreOutdatedError,
    StoreUnavailableError,
)
from roomkit.stores.sqlite._connect import FileWatch, hand_over, retry_locked
from roomkit.stores.sqlite._schema import (
    ADDED_CHAIN_COLUMNS,
    ADDED_COLUMNS,
    CHAIN_COLUMNS,
    MADE_TABLES,
    PENDING_COLUMNS,
    READ_SEQ,
    SCHEMA,
    SCHEMA_NAMES,
)
from roomkit.stores.sqlite._worker import Worker

__all__ = ["Link", "fetch_all", "in_doubt", "query", "synchronous_level"]

T = TypeVar("T")

logger = logging.getLogger("roomkit.tools.human_input.stores.sqlite")

_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
_WAITED = 0.001
"""Seconds a BEGIN takes at most without waiting for another connection's lock (SQLite's
busy handler first sleeps for a millisecond)."""
_CHECKPOINT_EVERY = 128
"""Commits between two checkpoints of the log: a few hundred pages of it, as SQLite's own
automatic checkpoint (off on the store's connection) would copy at a time."""
_STORE_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'roomkit_pending'"
"""Whether the file holds the store (its first table)."""


class Link:
    """A lazily opened connection with a lock around each use.

    Args:
        path: the database file.
        busy_timeout: seconds SQLite waits for another connection's lock.
        on_open: called after each (re)connect with the current change counter.
        synchronous: the connection's ``PRAGMA synchronous``: ``"full"`` or ``"normal"``.
        create: ``False``: open only a file that holds the store's tables already; any
            other (missing, empty, another program's database) raises
            :class:`~roomkit.core.exceptions.StoreNotFoundError`, and one made by an
            earlier version :class:`~roomkit.core.exceptions.StoreOutdatedError`, each
            left as it was.
    """

    def __init__(
        self,
        path: str,
        *,
        busy_timeout: float,
        on_open: Callable[[int], None],
        synchronous: str = "full",
        create: bool = True,
    ) -> None:
        self.path = path
        self.create = create
        # Without create, the file is opened for reading and writing only, never created,
        # and the store's tables are looked for before anything is written.
        self._target = path if create else f"file:{pathname2url(os.path.abspath(path))}?mode=rw"
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self._on_open = on_open
        self._db: aiosqlite.Connection | None = None
        self._raw: sqlite3.Connection | None = None
        self._watch: FileWatch | None = None
        self._lock = asyncio.Lock()
        self._level = synchronous
        """The connection's ``PRAGMA synchronous`` now: a transaction sets its own."""
        self._commits = 0
        self._worker = Worker(f"roomkit sqlite {os.path.basename(path)}")
        self.dirty = False
        """A transaction ended abnormally: it may or may not have committed."""

    @asynccontextmanager
    async def session(self) -> AsyncIterator[aiosqlite.Connection]:
        """Hold the connection, opening it if needed; SQLite faults become store errors.

        Raises:
            StoreUnavailableError: SQLite failed, or a file of the database moved.
        """
        async with self._use() as db:
            moved = self._moved(for_read=True)
            if moved is not None:
                await self._refuse(db, moved)
            try:
                yield db
            except asyncio.CancelledError:
                # What a cancelled block queued on aiosqlite's thread still runs there. The
                # connection is handed on once it has, so that a write transaction, run on
                # the link's own thread, never meets a stray statement of it.
                with suppress(sqlite3.Error, ValueError):
                    await db.execute_fetchall("SELECT 1")
                raise

    async def transaction(
        self,
        work: Callable[[sqlite3.Connection, float], T],
        *,
        clock: Callable[[], float],
        on_commit: Callable[[], None] = lambda: None,
        synced: bool = True,
    ) -> T:
        """Run ``work`` in a ``BEGIN IMMEDIATE`` transaction, committed when it returns.

        ``work`` gets the connection and a reading of ``clock``, taken on the event loop
        (a clock may be bound to it) just before the BEGIN. The transaction takes one trip
        to a worker thread, on the connection itself: the BEGIN, ``work``, the look for
        moved files and the COMMIT with its wait for the disk. When the BEGIN had to wait
        for another connection's write lock, that reading is too old to judge deadlines
        by: the trip comes back for a new one, and a second trip runs ``work``.
        ``on_commit`` runs on that thread as soon as the COMMIT is on disk, before the trip
        back. ``work`` raising rolls the transaction back and leaves with that error.

        ``synced=False`` commits at ``synchronous=NORMAL`` whatever the link's level: the
        COMMIT waits for no disk (it survives the process being killed, not a power loss,
        until the log is next synced by a COMMIT at ``FULL`` or a checkpoint).

        The log is copied into the database file by :meth:`checkpoint`, not inside a
        COMMIT (as SQLite's automatic checkpoint would), so that no caller waits for it.

        Raises:
            StoreUnavailableError: SQLite failed, or a file of the database moved before
                the COMMIT (nothing was written), or during it and the commit could not be
                saved (it may or may not be kept).
        """
        async with self._use() as db:
            assert self._raw is not None
            raw, watch = self._raw, self._watch
            level = self.synchronous if synced else "normal"

            def finish(now: float) -> tuple[T, str | None]:
                result = work(raw, now)
                moved = None if watch is None else watch.moved()
                raw.execute("COMMIT" if moved is None else "ROLLBACK")
                if moved is None:
                    on_commit()
                    self._commits += 1
                return result, moved

            def begin(now: float) -> tuple[T, str | None] | None:
                if level != self._level:
                    # Outside a transaction: SQLite changes the level only there.
                    raw.execute(f"PRAGMA synchronous = {level.upper()}")
                    self._level = level
                started = time.monotonic()
                raw.execute("BEGIN IMMEDIATE")
                return finish(now) if time.monotonic() - started < _WAITED else None

            try:
                read = clock()
                done = await self._worker.run(lambda: begin(read))
                if done is None:
                    now = clock()
                    done = await self._worker.run(lambda: finish(now))
                result, moved = done
            except BaseException:
                # A COMMIT cut short by a cancellation may still have landed.
                self.dirty = True
                with suppress(sqlite3.Error):
                    await self._worker.run(lambda: raw.execute("ROLLBACK"))
                raise
            if moved is not None:
                await self._refuse(db, moved)
            moved = self._moved()
            if moved is not None:
                await self._saved_or_refused(db, moved)
            return result

    def checkpoint_due(self) -> bool:
        """Whether :meth:`checkpoint` has a copy to make (enough commits came since the last)."""
        return self._commits >= _CHECKPOINT_EVERY

    async def checkpoint(self) -> None:
        """Copy the log into the database file once :data:`_CHECKPOINT_EVERY` commits have
        come since the last copy (a passive checkpoint: one that cannot run now, because a
        reader holds the log, runs next time). The writes call it after their callers
        have heard their results; with ``synchronous="normal"`` this is where the log is
        synced to disk."""
        if self._commits < _CHECKPOINT_EVERY:
            return
        async with self._lock:
            raw = self._raw
            if raw is None:
                return  # no connection to tidy: the next one starts afresh
            self._commits = 0
            with suppress(sqlite3.Error):
                # Its row read: a statement left unfinished would keep the next COMMIT out.
                await self._worker.run(lambda: query(raw, "PRAGMA wal_checkpoint(PASSIVE)"))

    def _moved(self, *, for_read: bool = False) -> str | None:
        return None if self._watch is None else self._watch.moved(for_read=for_read)

    async def _refuse(self, db: aiosqlite.Connection, moved: str) -> NoReturn:
        """Save what the connection's log holds, drop the connection, and refuse."""
        assert self._watch is not None
        watch = self._watch
        rescued = await watch.rescue(db, moved)
        await self._disconnect()
        raise watch.refusal(moved, rescued=rescued, store="SQLite store")

    async def _saved_or_refused(self, db: aiosqlite.Connection, moved: str) -> None:
        """A file moved during the COMMIT: acknowledge it only once it is in the database."""
        assert self._watch is not None
        if not await self._watch.rescue(db, moved):
            self.dirty = True
            await self._refuse(db, moved)
        logger.warning(
            "%r moved during a commit to SQLite store %r; the commit was copied into the "
            "database file and the store reopens its files at its next use",
            moved,
            self.path,
        )
        await self._disconnect()

    @asynccontextmanager
    async def _use(self) -> AsyncIterator[aiosqlite.Connection]:
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

    async def close(self) -> None:
        """Close the connection, once no block uses it; idempotent."""
        async with self._lock:
            await self._disconnect()

    async def _connect(self) -> aiosqlite.Connection:
        if self._db is not None:
            return self._db
        try:
            raw = await asyncio.to_thread(
                sqlite3.connect,
                self._target,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=not self.create,
            )
        except sqlite3.OperationalError:
            if not self.create and not await asyncio.to_thread(os.path.exists, self.path):
                raise self._not_found("does not exist") from None
            raise
        # The file is opened first and handed over, so a path that cannot be opened leaves no
        # worker thread behind to report to an event loop that may be closed by then.
        db = await hand_over(raw)
        try:
            if not self.create:
                # Read as it is, or refused: bringing it up to date would write to it.
                if not await fetch_all(db, _STORE_TABLE):
                    raise self._not_found("holds no roomkit store (no table roomkit_pending)")
                lacking = await _outdated(db)
                if lacking is not None:
                    raise self._outdated(lacking)
            await db.execute_fetchall(f"PRAGMA synchronous = {self.synchronous.upper()}")
            if self.create:
                await retry_locked(
                    lambda: db.executescript(SCHEMA),
                    self.busy_timeout,
                    undo=lambda: db.execute_fetchall("ROLLBACK"),
                )
                await _add_missing_columns(db)
            # Checkpoints run after a commit's hint went out, not inside the COMMIT.
            await db.execute_fetchall("PRAGMA wal_autocheckpoint = 0")
            ((counter,),) = await fetch_all(db, READ_SEQ)
        except BaseException:
            await _close_quietly(db)
            raise
        self._db, self._raw, self._level = db, raw, self.synchronous
        # The schema's transaction has the files open: these are the ones to keep using.
        self._watch = FileWatch(self.path)
        self._on_open(counter)
        return db

    async def _disconnect(self) -> None:
        db, self._db, self._raw, self._watch = self._db, None, None, None
        if db is not None:
            await _close_quietly(db)

    def _not_found(self, what: str) -> StoreNotFoundError:
        return StoreNotFoundError(
            f"SQLite file {self.path!r} {what}: nothing was created or changed in it"
        )

    def _outdated(self, lacking: str) -> StoreOutdatedError:
        return StoreOutdatedError(
            f"SQLite file {self.path!r} holds a roomkit store made by an earlier version "
            f"({lacking}), opened here only to read: nothing was created or changed in it. "
            "Open it once to write (create=True, the default: a desk on it, or an agent "
            "using it), which brings it up to date, then read it again",
            found=lacking,
        )

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


def query(db: sqlite3.Connection, statement: str, parameters: Sequence[Any] = ()) -> list[Any]:
    """Run one statement inside :meth:`Link.transaction`'s work; every row it yields."""
    return db.execute(statement, parameters).fetchall()


async def _add_missing_columns(db: aiosqlite.Connection) -> None:
    """Add the columns a file made by an earlier version lacks."""
    for listing, added in ((PENDING_COLUMNS, ADDED_COLUMNS), (CHAIN_COLUMNS, ADDED_CHAIN_COLUMNS)):
        present = {name for (name,) in await fetch_all(db, listing)}
        for column, statement in added.items():
            if column in present:
                continue
            try:
                await db.execute_fetchall(statement)
            except sqlite3.OperationalError as error:
                # Another process opening the file at the same moment added it first.
                if "duplicate column" not in str(error):
                    raise


async def _outdated(db: aiosqlite.Connection) -> str | None:
    """What a file that holds the store lacks of this version's schema that reading it needs
    (a table, a column, the change counter); ``None``: it reads as it is. Indexes only make
    reads faster: a file with an earlier version's indexes is read as it is."""
    names = {(kind, name) for kind, name in await fetch_all(db, SCHEMA_NAMES)}
    lacking = [f"no table {name}" for name in MADE_TABLES if ("table", name) not in names]
    if not lacking:
        for listing, added in (
            (PENDING_COLUMNS, ADDED_COLUMNS),
            (CHAIN_COLUMNS, ADDED_CHAIN_COLUMNS),
        ):
            present = {name for (name,) in await fetch_all(db, listing)}
            lacking += [f"no column {column}" for column in added if column not in present]
    if not lacking and not await fetch_all(db, READ_SEQ):
        lacking.append("no change counter")
    if not lacking:
        return None
    more = f" and {len(lacking) - 3} more" if len(lacking) > 3 else ""
    return ", ".join(lacking[:3]) + more


def _unreachable(error: sqlite3.DatabaseError) -> bool:
    # Locks, I/O, a missing or foreign file; constraint and programming errors are bugs.
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError


async def _close_quietly(db: aiosqlite.Connection) -> None:
    # The connection is being given up: a failure to close it cleanly changes nothing.
    with suppress(sqlite3.Error, ValueError):
        await db.close()


def synchronous_level(value: object) -> str:
    """``synchronous=`` checked: ``"full"`` or ``"normal"``.

    Raises:
        TypeError: ``value`` is not a ``str``.
        ValueError: it names another level.
    """
    if not isinstance(value, str):
        raise TypeError(f"synchronous must be a str, got {type(value).__name__}")
    if value.lower() not in ("full", "normal"):
        raise ValueError(
            f"synchronous must be 'full' (every commit on disk before it is acknowledged) "
            f"or 'normal' (commits survive a killed process, not a power loss), got {value!r}"
        )
    return value.lower()


def in_doubt(fault: StoreUnavailableError) -> bool:
    """Whether a settle that failed with ``fault`` may have committed.

    SQLite failed mid-transaction or at the COMMIT (an I/O error): it may have. A lock never
    taken, or a refusal of the store's own (a file moved under it), wrote nothing.
    """
    cause = fault.__cause__
    if not isinstance(cause, sqlite3.Error):
        return False
    return getattr(cause, "sqlite_errorcode", 0) & 0xFF not in _BUSY

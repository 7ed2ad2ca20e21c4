"""Opening a room-store file, watching its files, and saying what to check when SQLite fails.

:func:`connect` opens the file, sets the connection up (WAL, ``synchronous=FULL``, foreign
keys, the busy timeout), creates the tables that are missing in one transaction, and moves
the process's event ids past the ids already stored, with the node number that keeps them
apart from the ids of the other processes on the file (:mod:`roomkit.models.event_ids`).
:func:`unavailable` turns a SQLite error into
:class:`~roomkit.core.exceptions.StoreUnavailableError` with a hint at the cause.

:class:`FileWatch` (used by the room store and the SQLite pending store alike) notices that
the database file, its ``-wal`` or its ``-shm`` was deleted or replaced under an open
connection. SQLite does not: it goes on writing to the file it holds open, which nobody
else sees and which is gone at the next restart, so every commit it acknowledges from then
on would be lost. The stores check before they acknowledge a write and refuse it instead.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TypeVar

from roomkit._extras import requires_extra
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.models.event_ids import has_event_node, reserve_event_ids
from roomkit.stores import _sql_rows as rows

with requires_extra("roomkit.stores.sqlite (SQLiteStore, SQLiteRoomStore)", "sqlite"):
    import aiosqlite

__all__ = ["FileWatch", "connect", "hand_over", "retry_locked", "unavailable"]

T = TypeVar("T")

logger = logging.getLogger("roomkit.sqlite")

_SUFFIXES = ("", "-wal", "-shm")
"""The database file and its companions in WAL mode."""
_READS_LOOK_EVERY = 0.05
"""Seconds between the looks taken for reads: a look costs a few ``stat`` calls."""

_HINTS = (
    ("unable to open", "check that the directory exists and this process may write to it"),
    ("readonly", "check that this process may write to the file and its directory"),
    ("locked", "another connection holds a write lock longer than busy_timeout"),
    ("busy", "another connection holds a write lock longer than busy_timeout"),
    ("not a database", "check that the path names a SQLite database, not another file"),
    ("disk", "check that the disk has room and the file system is healthy"),
)


def unavailable(path: str, busy_timeout: float, error: sqlite3.Error) -> StoreUnavailableError:
    """The error to raise for ``error``, naming the file and what to check."""
    text = str(error)
    hint = next(
        (hint for marker, hint in _HINTS if marker in text.lower()),
        "check the file, its directory and the disk",
    )
    return StoreUnavailableError(
        f"Room store {path!r} is unavailable ({text}): {hint} (busy_timeout={busy_timeout:g} s)"
    )


class FileWatch:
    """The identity (device and inode) of a database's files when its connection opened.

    Taken once the connection has the files open (after its first transaction). A file that
    did not exist then is not watched. The path is made absolute first, so that a later
    change of the working directory is not taken for a replaced file.

    Args:
        path: the database file.
    """

    __slots__ = ("_looked", "_watched", "path")

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        """The database file, as an absolute path."""
        watched: list[tuple[str, int, int]] = []
        for suffix in _SUFFIXES:
            try:
                status = os.stat(self.path + suffix)
            except OSError:
                continue
            watched.append((self.path + suffix, status.st_dev, status.st_ino))
        # Each file that existed, with its identity then: a look stats these alone.
        self._watched = tuple(watched)
        self._looked = time.monotonic()

    def moved(self, *, for_read: bool = False) -> str | None:
        """The file (database, ``-wal`` or ``-shm``) no longer the one opened, or ``None``.

        A write looks every time. A read (``for_read``) only looks when the last look is
        older than 50 ms: it is answered rightly from the files held open, and its look only
        serves to save what the log holds sooner.
        """
        looked = time.monotonic()
        if for_read and looked - self._looked < _READS_LOOK_EVERY:
            return None
        self._looked = looked
        for path, device, inode in self._watched:
            try:
                status = os.stat(path)
            except OSError:
                return path
            if status.st_ino != inode or status.st_dev != device:
                return path
        return None

    async def rescue(self, db: aiosqlite.Connection, moved: str) -> bool:
        """Copy the log the connection still holds into the database file; True if all of it.

        Only the connection that held the log can: once it closes, what the log held is
        gone. Nothing can be saved when the database file itself is the one that moved.
        """
        if moved == self.path:
            return False
        try:
            [(busy, frames, copied)] = await db.execute_fetchall("PRAGMA wal_checkpoint(FULL)")
        except (sqlite3.Error, ValueError):
            return False
        return bool(busy == 0 and frames == copied)

    def refusal(self, moved: str, *, rescued: bool, store: str) -> StoreUnavailableError:
        """The error refusing what comes after ``moved`` moved; ``store`` names the store."""
        if moved == self.path:
            return StoreUnavailableError(
                f"{store} {self.path!r} was deleted or replaced while open: refused, since "
                "nothing written to the file this process holds would be kept. The store "
                "opens the file now at that path at its next use."
            )
        if rescued:
            saved = f"What was committed before was copied into {self.path!r}"
        else:
            saved = (
                f"What was committed since the last checkpoint could not be copied into "
                f"{self.path!r} (stop every process that has it open)"
            )
        return StoreUnavailableError(
            f"{store} {self.path!r}: {moved!r} was deleted or replaced while open: refused, "
            f"since nothing written through it would survive a restart. {saved}, and the "
            "store opens its files afresh at its next use. Never delete or move a "
            "database's -wal or -shm file while a process has it open."
        )


async def hand_over(raw: sqlite3.Connection) -> aiosqlite.Connection:
    """``raw`` behind an aiosqlite connection, its statements run on a thread of its own.

    That thread is a daemon, as the stores' write threads are: a program that ends without
    closing its store exits rather than waiting for the thread for ever (aiosqlite's threads
    keep a process alive until their connection is closed). Whatever a store acknowledged is
    committed already; what runs as the program ends is cut, as by a crash, which SQLite's
    log survives.
    """
    db = aiosqlite.Connection(lambda: raw, iter_chunk_size=64)
    thread = getattr(db, "_thread", None)  # made here, started by the await below
    if thread is not None and not thread.is_alive():
        thread.daemon = True
    return await db


async def connect(path: str, busy_timeout: float) -> aiosqlite.Connection:
    """An open, prepared connection to the room store at ``path``.

    Raises:
        StoreUnavailableError: the file cannot be opened, read or written.
    """
    try:
        raw = await asyncio.to_thread(
            sqlite3.connect,
            path,
            timeout=busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.DatabaseError as error:
        raise unavailable(path, busy_timeout, error) from error
    # The file is opened first and handed over, so a path that cannot be opened leaves no
    # worker thread behind to report to an event loop that may be closed by then.
    db = await hand_over(raw)
    try:
        last_event_id, node = await _prepare(db, busy_timeout)
    except sqlite3.DatabaseError as error:
        await db.close()
        raise unavailable(path, busy_timeout, error) from error
    except BaseException:
        await db.close()
        raise
    reserve_event_ids(last_event_id, node=node)
    return db


async def retry_locked(
    attempt: Callable[[], Awaitable[T]],
    busy_timeout: float,
    *,
    undo: Callable[[], Awaitable[object]] | None = None,
) -> T:
    """Run ``attempt``, again while SQLite reports the database locked, for ``busy_timeout``.

    Switching a new file to WAL takes a lock that SQLite's busy handler does not wait for,
    so processes opening a new file at the same moment would fail at once without this.
    ``undo`` runs before each retry (e.g. a ROLLBACK).
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + busy_timeout
    pause = 0.005
    while True:
        try:
            return await attempt()
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or loop.time() >= give_up:
                raise
        if undo is not None:
            with suppress(sqlite3.Error):
                await undo()
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.1)


async def _prepare(db: aiosqlite.Connection, busy_timeout: float) -> tuple[int, int | None]:
    """Set the connection up and create the schema; the largest stored event id, and the
    node number taken for this process's event ids (``None`` when it has one already)."""
    await retry_locked(lambda: db.execute_fetchall("PRAGMA journal_mode = WAL"), busy_timeout)
    await db.execute_fetchall("PRAGMA synchronous = FULL")
    await db.execute_fetchall("PRAGMA foreign_keys = ON")
    [(present,)] = await db.execute_fetchall(rows.COUNT_TABLES, rows.TABLES)
    if present < len(rows.TABLES):
        # One transaction, so a process opening the file at the same moment sees either no
        # schema or all of it.
        await db.execute_fetchall("BEGIN IMMEDIATE")
        for statement in rows.SCHEMA:
            await db.execute_fetchall(statement)
        await db.execute_fetchall("COMMIT")
    [(last,)] = await db.execute_fetchall(rows.LAST_EVENT_ID)
    node = None
    if not has_event_node():
        [(node,)] = await db.execute_fetchall(rows.TAKE_EVENT_NODE)
    return int(last or 0), node

"""Opening a room-store file, and saying what to check when SQLite fails.

:func:`connect` opens the file, sets the connection up (WAL, ``synchronous=FULL``, foreign
keys, the busy timeout), creates the tables that are missing in one transaction, and moves
the process's event ids past the ids already stored. :func:`unavailable` turns a SQLite error
into :class:`~roomkit.core.exceptions.StoreUnavailableError` with a hint at the cause.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TypeVar

from roomkit.core import _sqlite_rows as rows
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.models import room as room_model

T = TypeVar("T")

try:
    import aiosqlite
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "SQLiteRoomStore needs aiosqlite: pip install 'roomkit-hitl[sqlite]'"
    ) from error

__all__ = ["connect", "retry_locked", "unavailable"]

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
    db = await aiosqlite.Connection(lambda: raw, iter_chunk_size=64)
    try:
        last_event_id = await _prepare(db, busy_timeout)
    except sqlite3.DatabaseError as error:
        await db.close()
        raise unavailable(path, busy_timeout, error) from error
    except BaseException:
        await db.close()
        raise
    _keep_event_ids_after(last_event_id)
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


async def _prepare(db: aiosqlite.Connection, busy_timeout: float) -> int:
    """Set the connection up and create the schema; the largest stored event id."""
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
    return int(last or 0)


def _keep_event_ids_after(last_used: int) -> None:
    """Make the ids of the events created from now on greater than ``last_used``."""
    room_model.reserve_event_ids(last_used)

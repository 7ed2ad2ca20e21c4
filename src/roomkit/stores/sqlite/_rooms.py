"""Rooms, rosters, bindings, history and the turn journal in a SQLite file.

:class:`SQLiteRoomStore` keeps what :class:`~roomkit.core.store.InMemoryStore` keeps, on
disk, and records the turns in flight (:class:`~roomkit.core.store.TurnJournal`) so that a
restarted process can finish them. Several processes may open the same file (an agent process
writing, a desk process reading rosters), and the file may be the one a SQLite pending-request
store uses: the tables here are prefixed ``roomkit_`` and none is shared.

Every write is committed on its own, in WAL mode with ``synchronous=FULL``: a write that
returned is on disk, and another process sees it at its next read. Most writes are one
statement; the two that must not be split (a message with the turns it starts, a turn's end
with its reply) are one transaction each, and so is a round of lease renewals (one commit
however many turns it renews). Before and after each write (and at most every 50 ms
before a read) the store checks that its files are still the ones it opened
(:class:`~roomkit.stores.sqlite._connect.FileWatch`): when one was deleted or replaced, what
the connection's log holds is copied into the database file, the connection is dropped, and
the call is refused; a write during which a file moved is acknowledged only once it was
copied in with the rest.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, NoReturn

from roomkit.stores import _sql_rows as rows
from roomkit.stores._sql_rooms import Run, SQLRooms
from roomkit.stores.sqlite._connect import FileWatch, connect, unavailable

if TYPE_CHECKING:
    import aiosqlite

__all__ = ["SQLiteRoomStore"]

logger = logging.getLogger("roomkit.core.sqlite_store")


class SQLiteRoomStore(SQLRooms):
    """A :class:`~roomkit.core.store.RoomStore` and turn journal in one SQLite file.

    The database opens on first use, or with :meth:`open` / ``async with``; the tables are
    created when missing. Events keep their ids and are listed in the order they were added,
    and opening the store makes the ids of events created from then on exceed every stored
    id, so a restarted process neither reuses an id nor sorts a new event before an old one.
    Opening it also gives the process the node number that keeps its event ids apart from
    those of the other processes on the file.

    Args:
        path: the database file (created when missing; its directory must exist).
        busy_timeout: seconds a statement waits for another connection's write lock
            before the store reports :class:`~roomkit.core.exceptions.StoreUnavailableError`.

    Raises:
        ValueError: ``busy_timeout`` is negative.
    """

    _taken = sqlite3.IntegrityError

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout must be 0 or more seconds, got {busy_timeout!r}")
        self.path = os.fspath(path)
        """The database file."""
        self.busy_timeout = busy_timeout
        """Seconds a statement waits for another connection's write lock."""
        self._sql = rows.STATEMENTS
        self._db: aiosqlite.Connection | None = None
        self._watch: FileWatch | None = None
        self._opening = asyncio.Lock()
        # The connection is shared: a transaction holds it, so that no other statement
        # slips in between its BEGIN and its COMMIT.
        self._using = asyncio.Lock()

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect and create the tables that are missing; does nothing when open.

        Raises:
            StoreUnavailableError: the file cannot be opened or written.
        """
        await self._connection()

    async def close(self) -> None:
        """Close the connection; a later call opens it again."""
        db, self._db, self._watch = self._db, None, None
        if db is not None:
            await db.close()

    async def _connection(self) -> tuple[aiosqlite.Connection, FileWatch]:
        async with self._opening:
            if self._db is None or self._watch is None:
                self._db = await connect(self.path, self.busy_timeout)
                self._watch = FileWatch(self.path)
            return self._db, self._watch

    @asynccontextmanager
    async def _held(
        self, *, for_read: bool = False
    ) -> AsyncIterator[tuple[aiosqlite.Connection, FileWatch]]:
        """The connection, held for one statement or one transaction, its files checked.

        Raises:
            StoreUnavailableError: a file of the database moved (what the connection's log
                held is saved first).
        """
        db, watch = (
            (self._db, self._watch)
            if self._db is not None and self._watch is not None
            else await self._connection()
        )
        async with self._using:
            moved = watch.moved(for_read=for_read)
            if moved is not None:
                await self._refuse(db, watch, moved)
            yield db, watch

    async def _run(
        self, sql: str, params: Sequence[Any] = (), *, read: bool = False
    ) -> list[rows.Row]:
        """Run one statement (committed on its own when it writes) and return its rows.

        Raises:
            StoreUnavailableError: SQLite failed, or a file of the database moved.
        """
        async with self._held(for_read=read) as (db, watch):
            try:
                found = list(await db.execute_fetchall(sql, params))
            except (sqlite3.IntegrityError, sqlite3.ProgrammingError):
                raise
            except sqlite3.DatabaseError as error:
                raise unavailable(self.path, self.busy_timeout, error) from error
            if not read:
                await self._keep(db, watch)
        return found

    @asynccontextmanager
    async def _transaction(self, missing: str) -> AsyncIterator[Run]:
        """One write transaction: committed when the block ends, else rolled back.

        Raises:
            KeyError: a parent row is missing; ``missing`` says which (nothing is written).
            StoreUnavailableError: SQLite failed, or a file of the database moved.
        """
        async with self._held() as (db, watch):

            async def run(statement: str, params: Any) -> list[Any]:
                return list(await db.execute_fetchall(statement, params))

            try:
                try:
                    await db.execute_fetchall("BEGIN IMMEDIATE")
                    yield run
                    await db.execute_fetchall("COMMIT")
                except BaseException:
                    # The connection's thread runs what was queued even for a caller
                    # cancelled since: a BEGIN still waiting for the lock gets it later, and
                    # the ROLLBACK queued behind it gives it back. (A BEGIN that failed, or a
                    # COMMIT that landed, leaves nothing to undo.)
                    with suppress(sqlite3.Error):
                        await db.execute_fetchall("ROLLBACK")
                    raise
            except sqlite3.IntegrityError as error:
                if "FOREIGN KEY" not in str(error):
                    raise
                raise KeyError(missing) from None
            except sqlite3.ProgrammingError:
                raise
            except sqlite3.DatabaseError as error:
                raise unavailable(self.path, self.busy_timeout, error) from error
            await self._keep(db, watch)

    async def _keep(self, db: aiosqlite.Connection, watch: FileWatch) -> None:
        """After a write: when a file moved while it ran, keep it only if it is copied in."""
        moved = watch.moved()
        if moved is None:
            return
        if not await watch.rescue(db, moved):
            await self._refuse(db, watch, moved)
        logger.warning(
            "%r moved while room store %r wrote to it; the write was copied into the "
            "database file and the store reopens its files at its next use",
            moved,
            self.path,
        )
        await self._drop(db)

    async def _refuse(self, db: aiosqlite.Connection, watch: FileWatch, moved: str) -> NoReturn:
        """Save what the connection's log holds, drop the connection, and refuse the call."""
        rescued = await watch.rescue(db, moved)
        await self._drop(db)
        raise watch.refusal(moved, rescued=rescued, store="Room store")

    async def _drop(self, db: aiosqlite.Connection) -> None:
        """Close ``db`` unless another call replaced it already; the next call reconnects."""
        async with self._opening:
            if self._db is not db:
                return
            self._db = self._watch = None
        # Statements queued on it before run first; a close that fails changes nothing.
        with suppress(sqlite3.Error, ValueError):
            await db.close()

    async def _read(self, statement: str, params: Any = ()) -> list[Any]:
        return await self._run(statement, params, read=True)

    async def _write(self, statement: str, params: Any, *, missing: str = "") -> list[Any]:
        try:
            return await self._run(statement, params)
        except sqlite3.IntegrityError as error:
            if "FOREIGN KEY" not in str(error):
                raise
            raise KeyError(missing) from None

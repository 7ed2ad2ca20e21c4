"""The Postgres stores' link: the pool, the first connection, the faults.

:class:`Link` owns (or borrows) a ``psycopg_pool.AsyncConnectionPool``. Opening it makes one
connection first, on its own, so that a wrong host, password or database name surfaces as a
:class:`~roomkit.core.exceptions.StoreError` naming what to check, at once, instead of a
pool that waits for connections that never come; that connection also creates or migrates
the tables (:func:`~roomkit.stores.postgres._migrate.migrate`, under an advisory lock,
refusing tables newer than the code).
Afterwards every fault of the server or the network raises
:class:`~roomkit.core.exceptions.StoreUnavailableError`, and so does a queue for a connection
of a busy pool past :data:`QUEUE_TIMEOUT`, saying that the pool was too small (which is no
fault: the server is not taken for down); a value the server refuses as too
long for it (an index entry past its limit) raises a plain
:class:`~roomkit.core.exceptions.StoreError` naming what was too long, and so does a privilege
the server refuses the store's user, naming what to grant. The room store and the
pending-request store share this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from roomkit.core.exceptions import (
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
)
from roomkit.stores._opening import SharedOpening
from roomkit.stores.postgres._dsn import check_dsn, check_schema_name, describe, first_line
from roomkit.stores.postgres._migrate import Migrations, migrate, version_table
from roomkit.stores.postgres._refused import refused_error
from roomkit.stores.postgres._silence import LOST, silenced
from roomkit.stores.postgres._too_long import too_long_error

__all__ = [
    "LOST",
    "Link",
    "Migrations",  # at home in _migrate; named here too, for the old path core.postgres_link
    "check_dsn",  # at home in _dsn, as are the next two; named here for the old path too
    "check_schema_name",
    "describe",
    "migrate",
    "version_table",
]

Prepare = Callable[[AsyncConnection[Any], str], Awaitable[None]]
"""Creates or migrates a store's tables on the first connection, given the server's name."""

QUEUE_TIMEOUT = 60.0
"""Seconds a call may queue for a connection of a busy pool (while the server answers); past
them the call fails saying the pool was busy, and the server does not count as down."""
SILENCE = 60.0
"""Seconds a call of the store may take on one connection: past them the server counts as
not answering (frozen, or cut off without a reset, which no connect timeout sees) and the
call fails as unavailable."""
_RECONNECT_SECONDS = 0.5
"""How long the own pool's attempt to replace one lost connection keeps trying. It then
gives up, and the next call that needs a connection starts a new attempt at once. Left to
psycopg_pool's default (five minutes, waiting 1, 2, 4, 8 s ... between tries), a store whose
server was away 10 s could stay unavailable for up to 10 s after it came back."""


class Link:
    """The store's pool, opened with a check of the server and the tables.

    Args:
        target: a DSN (the pool is the link's own), a pool (borrowed, never closed), or
            another store's link, whose pool this one uses while that link holds it open
            (the room store beside a request store: one pool for both); an opening of this
            link that opened that one and fails closes it again.
        prepare: creates or migrates the store's tables on the first connection.
        schema: the PostgreSQL schema of the tables, for messages.
        pool_size: the most connections an owned pool opens.
        connect_timeout: seconds the first connection may take.
        stays_closed: after :meth:`close`, calls raise
            :class:`~roomkit.core.exceptions.StoreClosedError` until ``open(reopen=True)``,
            instead of opening the pool again.
    """

    def __init__(
        self,
        target: str | AsyncConnectionPool[Any] | Link,
        prepare: Prepare,
        *,
        pool_size: int,
        connect_timeout: float,
        schema: str = "public",
        stays_closed: bool = False,
    ) -> None:
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"pool_size must be an int >= 1, got {pool_size!r}")
        self._prepare = prepare
        self._schema = schema
        self._owner = target if isinstance(target, Link) else None
        self._borrowed = not isinstance(target, str)
        self._pool: AsyncConnectionPool[Any] | None = (
            target if isinstance(target, AsyncConnectionPool) else None
        )
        if isinstance(target, Link):
            dsn: object = target.dsn
        else:
            dsn = target if isinstance(target, str) else target.conninfo
        if not isinstance(dsn, str):
            raise TypeError(
                "the pool's conninfo must be a str: the change feed opens a connection of "
                "its own with it; pass the DSN itself, or a pool made with a str conninfo"
            )
        self.dsn: str = dsn
        """The connection string (of the borrowed pool, when one was given)."""
        self.where = describe(self.dsn)
        """The server and database, for messages."""
        self._pool_size = pool_size
        self._connect_timeout = connect_timeout
        self._opened = False
        self._lock = asyncio.Lock()
        self._opening = SharedOpening()
        self._checking: asyncio.Task[None] | None = None
        self._faulted = False
        self._stays_closed = stays_closed
        self._closed = False
        self._opened_owner = False

    @property
    def connect_timeout(self) -> float:
        """Seconds a connection may take to open."""
        return self._connect_timeout

    @property
    def opened(self) -> bool:
        """Whether the link is open: its tables checked, its pool started."""
        return self._opened

    @property
    def pool_size(self) -> int:
        """The most connections of the pool: ``pool_size``, or the ``max_size`` of a pool
        the link borrows."""
        if self._owner is not None:
            return self._owner.pool_size
        return self._pool.max_size if self._borrowed and self._pool is not None else self._pool_size

    def connect_kwargs(self) -> dict[str, Any]:
        """What a connection of the store's own (the change feed's) is opened with."""
        if self._owner is not None:
            return self._owner.connect_kwargs()
        kwargs: dict[str, Any] = {}
        if self._borrowed and self._pool is not None and isinstance(self._pool.kwargs, dict):
            kwargs.update(self._pool.kwargs)
        kwargs["autocommit"] = True
        kwargs.setdefault("connect_timeout", max(1, round(self._connect_timeout)))
        return kwargs

    async def open(self, *, reopen: bool = False) -> None:
        """Check the server and the tables, then open the pool; idempotent.

        Args:
            reopen: open a link made ``stays_closed`` after it was closed.

        Raises:
            StoreClosedError: the link stays closed, and ``reopen`` is false.
            StoreError: the server, the user or the database is wrong (the message says
                which to check).
            StoreFormatError: the tables were made by a newer version of roomkit.
        """
        if reopen:
            self._closed = False
        if self._closed:
            raise StoreClosedError.of("PostgreSQL", self.where)
        if self._owner is not None:
            if not self._owner.opened:
                # This opening starts the owner's pool: if it fails, it closes that too.
                self._opened_owner = True
            # The owner's pool, as the owner holds it now (a reopened owner has a new one).
            await self._owner.open()
            self._pool = self._owner._pool
        if not self._opened:
            await self._opening.join(self._open_once)

    async def _open_once(self) -> None:
        """The opening itself, under the lock that :meth:`close` takes too."""
        async with self._lock:
            if self._opened:
                return
            if self._owner is not None:
                await self._prepared_beside()
                self._opened = True
                return
            try:
                first = await AsyncConnection.connect(self.dsn, **self.connect_kwargs())
            except (*LOST, UnicodeError) as error:
                # UnicodeError: a host name the resolver cannot encode (a label past 63
                # characters), which no server answers to.
                raise StoreError(
                    f"cannot connect to the PostgreSQL store at {self.where}: "
                    f"{first_line(error)}; check the host and port, that the server runs, "
                    f"the user name and password, and that the database exists "
                    f"(createdb <name>)"
                ) from error
            try:
                await self._prepared_on(first)
            finally:
                await first.close()
            if self._pool is None:
                self._pool = AsyncConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self._pool_size,
                    kwargs=self.connect_kwargs(),
                    open=False,
                    reconnect_timeout=_RECONNECT_SECONDS,
                    reconnect_failed=self._gave_up,
                    name=f"roomkit {self.where}",
                )
                await self._pool.open()
            elif self._pool.closed:
                await self._pool.open()
            self._opened = True

    async def _prepared_beside(self) -> None:
        """Prepare the tables on a connection of the owner's pool; when that fails (or is
        cancelled) and this opening started the owner's pool, close it again."""
        assert self._owner is not None
        try:
            async with self._owner.connection() as shared:
                await self._prepared_on(shared)
        except BaseException:
            if self._opened_owner:
                await self._owner.release()
            raise
        finally:
            self._opened_owner = False

    async def _prepared_on(self, db: AsyncConnection[Any]) -> None:
        try:
            await self._prepare(db, self.where)
        except psycopg.errors.InsufficientPrivilege as error:
            raise self.refused(error, db, making=True) from error
        except psycopg.Error as error:
            raise StoreError(
                f"cannot prepare the tables of the PostgreSQL store at {self.where}: "
                f"{first_line(error)}; check that the user may create tables there"
            ) from error

    async def close(self) -> None:
        """Close the pool if it is the link's own; idempotent."""
        # An opening every caller left holds the lock until its connect times out.
        await self._opening.abandon()
        await self._shut(closed=self._stays_closed)

    async def release(self) -> None:
        """Undo an opening that failed after it started the pool: close the pool if it is
        the link's own, and leave the link to open again on the next call (not closed).

        An opening that another call still waits on runs on for that call, and keeps what
        it opens.
        """
        if await self._opening.abandon():
            await self._shut(closed=self._closed)

    async def _shut(self, *, closed: bool) -> None:
        """Close the pool if it is the link's own; ``closed``: calls are refused from now."""
        async with self._lock:
            self._opened = False
            self._closed = closed
            checking, self._checking = self._checking, None
            if checking is not None and not checking.done():
                checking.cancel()
                with contextlib.suppress(asyncio.CancelledError, *LOST):
                    await checking
            if not self._borrowed and self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.close()

    @asynccontextmanager
    async def connection(
        self, *, bound: float | None = None
    ) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection of the pool; server and network faults become store errors.

        Args:
            bound: seconds the block may take before the server counts as not answering
                (``None``: :data:`SILENCE`); a purge of a long backlog passes more.

        Raises:
            StoreUnavailableError: the server did not answer, or every connection of the
                pool stayed busy with other calls for :data:`QUEUE_TIMEOUT` seconds (the
                message says which).
            StoreError: the server refused a value as too long for it.
        """
        await self.open()
        assert self._pool is not None
        # A busy pool lets callers queue for a connection; after a fault (a server away,
        # whose pool has no connection to hand out) they fail fast instead, until a call
        # gets through again.
        pool = self._pool
        timeout = self._connect_timeout if self._faulted else QUEUE_TIMEOUT
        try:
            db = await self._checkout(pool, timeout)
        except StoreUnavailableError:
            # A queue past its bound on a server that answers (busy); being a
            # ConnectionError, it would otherwise count as a fault below.
            raise
        except LOST as error:
            self._faulted = True
            self._recheck()
            raise self.unavailable(error) from error
        try:
            async with db, silenced(db, SILENCE if bound is None else bound):
                yield db
        except psycopg.errors.InsufficientPrivilege as error:
            raise self.refused(error, db, making=False) from error
        except psycopg.errors.ProgramLimitExceeded as error:
            # SQLSTATE class 54 is an OperationalError to psycopg, yet the server answered:
            # a value past what it holds (an index entry) is no outage, and no retry helps.
            raise too_long_error(error, self.where) from error
        except LOST as error:
            self._faulted = True
            self._recheck()
            raise self.unavailable(error) from error
        finally:
            await pool.putconn(db)
        self._faulted = False

    async def _checkout(
        self, pool: AsyncConnectionPool[Any], timeout: float
    ) -> AsyncConnection[Any]:
        """A connection of ``pool`` the server has not hung up on.

        A server that restarted has closed every idle connection of the pool: the first
        found closed has the pool test the others (and replace the closed ones) before the
        call takes another, so that calls after a restart are not refused one per stale
        connection.
        """
        db = await self._getconn(pool, timeout)
        if not _spoke(db):
            return db
        try:
            await pool.check_connection(db)
        except LOST:
            await pool.putconn(db)  # closed: the pool drops it
        except BaseException:
            await pool.putconn(db)  # a cancelled call leaves the pool whole
            raise
        else:
            return db
        await pool.check()
        return await self._getconn(pool, self._connect_timeout)

    async def _getconn(
        self, pool: AsyncConnectionPool[Any], timeout: float
    ) -> AsyncConnection[Any]:
        """A connection of ``pool`` within ``timeout`` seconds, or PoolTimeout.

        The wait is cut in turns of at most ``connect_timeout`` seconds: a call that queued
        on a busy pool gives up at the end of its turn once a fault is known (found by
        another call, or the pool failing to reconnect), instead of waiting out its whole
        timeout for a server that is gone. A wait that ends with no fault known, and no
        connection attempt of the pool failed meanwhile, was a queue behind other calls.

        Raises:
            PoolTimeout: no connection within ``timeout``, and the server may be away.
            StoreUnavailableError: no connection within ``timeout``, every one of the pool
                busy with other calls while the server answered.
        """
        deadline = asyncio.get_running_loop().time() + timeout
        failed = _failed_connects(pool)
        while True:
            left = deadline - asyncio.get_running_loop().time()
            try:
                db: AsyncConnection[Any] = await pool.getconn(
                    timeout=max(min(left, self._connect_timeout), 0.001)
                )
            except PoolTimeout as error:
                if self._faulted:
                    raise
                if left <= self._connect_timeout:
                    if _failed_connects(pool) != failed:
                        raise
                    raise self.busy(pool, timeout) from error
            else:
                return db

    def _gave_up(self, pool: AsyncConnectionPool[Any]) -> None:
        """The pool could not replace a connection: calls queued on it stop waiting."""
        self._faulted = True

    def _recheck(self) -> None:
        """After a fault, have the pool test its idle connections and replace the broken.

        Connections are not tested on every checkout (a round trip each): a server that
        restarted leaves the idle ones broken, and one fault is enough to find them all.
        """
        pool = self._pool
        if pool is None or (self._checking is not None and not self._checking.done()):
            return
        self._checking = asyncio.get_running_loop().create_task(
            pool.check(), name=f"roomkit pool check {self.where}"
        )

    def busy(self, pool: AsyncConnectionPool[Any], waited: float) -> StoreUnavailableError:
        """The error of a call that queued ``waited`` seconds behind the other calls."""
        size = pool.max_size
        if self._owns_pool():
            advice = (
                f"raise the store's pool_size (pool_size={2 * size}, or ?pool_size={2 * size} "
                "in its URL)"
            )
        else:
            advice = f"raise the max_size of the pool you pass (max_size={2 * size})"
        return StoreUnavailableError(
            f"the PostgreSQL store at {self.where} is busy: no connection was free for "
            f"{waited:g} s: all {size} connections of the store's pool stayed busy with other "
            f"calls (a queue, not a server that is down); {advice} or make fewer calls at once"
        )

    def _owns_pool(self) -> bool:
        """Whether the pool is one the store made (its size set by ``pool_size``)."""
        return self._owner._owns_pool() if self._owner is not None else not self._borrowed

    def refused(
        self, error: psycopg.Error, db: AsyncConnection[Any], *, making: bool
    ) -> StoreError:
        """The error of a store whose user the server refused a privilege with ``error``,
        ``making`` or checking its tables, or using them."""
        return refused_error(
            error, self.where, schema=self._schema, user=db.info.user, making=making
        )

    def unavailable(self, error: BaseException) -> StoreUnavailableError:
        """The error of a store the server of which did not answer with ``error``."""
        return StoreUnavailableError(
            f"the PostgreSQL store at {self.where} is unavailable ({first_line(error)}): "
            f"check that the server runs and accepts connections"
        )


def _spoke(db: AsyncConnection[Any]) -> bool:
    """Whether the server sent something on ``db`` while it sat idle in the pool, which it
    only does to end the session (a restart, a terminated backend): one poll of the socket,
    no round trip."""
    try:
        fd = db.pgconn.socket
    except psycopg.OperationalError:
        return True
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def _failed_connects(pool: AsyncConnectionPool[Any]) -> int:
    """How many connection attempts of ``pool`` failed (a counter of its statistics)."""
    return pool.get_stats().get("connections_errors", 0)

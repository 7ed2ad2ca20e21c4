"""How the Postgres store reaches its server: the pool, the first connection, the faults.

:class:`Link` owns (or borrows) a ``psycopg_pool.AsyncConnectionPool``. Opening it makes one
connection first, on its own, so that a wrong host, password or database name surfaces as a
:class:`~roomkit.core.exceptions.StoreError` naming what to check, at once, instead of a
pool that waits for connections that never come; that connection also creates or migrates
the tables. Afterwards every fault of the server or the network raises
:class:`~roomkit.core.exceptions.StoreUnavailableError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from roomkit.core.exceptions import StoreError, StoreFormatError, StoreUnavailableError
from roomkit.tools.human_input.stores._postgres_schema import VERSION, Statements

__all__ = ["Link", "check_dsn", "describe"]

_SCHEMES = ("postgresql://", "postgres://")
_LOST = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, OSError)


def check_dsn(dsn: object) -> str:
    """``dsn`` as a libpq connection string, or an error saying what one looks like.

    Raises:
        TypeError: ``dsn`` is not a ``str``.
        ValueError: it is not a ``postgresql://`` / ``postgres://`` URL nor a
            ``key=value`` connection string.
    """
    if not isinstance(dsn, str):
        raise TypeError(
            f"dsn must be a str (postgresql://user:password@host:5432/db) or an "
            f"AsyncConnectionPool, got {type(dsn).__name__}"
        )
    if not dsn.startswith(_SCHEMES) and "=" not in dsn:
        raise ValueError(
            f"{describe(dsn)!r} is not a PostgreSQL DSN: pass postgresql://user:password@"
            f"host:5432/database (or postgres://..., or 'host=... dbname=...')"
        )
    try:
        conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as error:
        raise ValueError(f"the PostgreSQL DSN cannot be read: {error}") from None
    return dsn


def describe(dsn: str) -> str:
    """The server and database of ``dsn``, without its password, for messages."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return dsn.split("@")[-1] if "@" in dsn else dsn.partition("://")[0] + "://..."
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    database = parts.get("dbname") or parts.get("user") or ""
    return f"postgresql://{host}:{port}/{database}"


class Link:
    """The store's pool, opened with a check of the server and the tables.

    Args:
        target: a DSN (the pool is the link's own) or a pool (borrowed, never closed).
        sql: the statements of the store's schema.
        pool_size: the most connections an owned pool opens.
        connect_timeout: seconds the first connection may take.
    """

    def __init__(
        self,
        target: str | AsyncConnectionPool[Any],
        sql: Statements,
        *,
        pool_size: int,
        connect_timeout: float,
    ) -> None:
        self._sql = sql
        self._borrowed = not isinstance(target, str)
        self._pool: AsyncConnectionPool[Any] | None = None if isinstance(target, str) else target
        dsn = target if isinstance(target, str) else target.conninfo
        if not isinstance(dsn, str):
            raise TypeError(
                "the pool's conninfo must be a str: the change feed opens a connection of "
                "its own with it; pass the DSN itself, or a pool made with a str conninfo"
            )
        self.dsn = dsn
        """The connection string (of the borrowed pool, when one was given)."""
        self.where = describe(self.dsn)
        """The server and database, for messages."""
        self._pool_size = pool_size
        self._connect_timeout = connect_timeout
        self._opened = False
        self._lock = asyncio.Lock()

    def connect_kwargs(self) -> dict[str, Any]:
        """What a connection of the store's own (the change feed's) is opened with."""
        kwargs: dict[str, Any] = {}
        if self._borrowed and self._pool is not None and isinstance(self._pool.kwargs, dict):
            kwargs.update(self._pool.kwargs)
        kwargs["autocommit"] = True
        kwargs.setdefault("connect_timeout", max(1, round(self._connect_timeout)))
        return kwargs

    async def open(self) -> None:
        """Check the server and the tables, then open the pool; idempotent.

        Raises:
            StoreError: the server, the user or the database is wrong (the message says
                which to check).
            StoreFormatError: the tables were made by a newer version of roomkit.
        """
        if self._opened:
            return
        async with self._lock:
            if self._opened:
                return
            try:
                first = await AsyncConnection.connect(self.dsn, **self.connect_kwargs())
            except _LOST as error:
                raise StoreError(
                    f"cannot connect to the PostgreSQL store at {self.where}: "
                    f"{_first_line(error)}; check the host and port, that the server runs, "
                    f"the user name and password, and that the database exists "
                    f"(createdb <name>)"
                ) from error
            try:
                await self._migrate(first)
            except psycopg.Error as error:
                raise StoreError(
                    f"cannot prepare the tables of the PostgreSQL store at {self.where} "
                    f"(schema {self._sql.schema!r}): {_first_line(error)}; check that the "
                    f"user may create tables there"
                ) from error
            finally:
                await first.close()
            if self._pool is None:
                self._pool = AsyncConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self._pool_size,
                    kwargs={"autocommit": True},
                    open=False,
                    check=AsyncConnectionPool.check_connection,
                    name=f"roomkit {self.where}",
                )
                await self._pool.open()
            elif self._pool.closed:
                await self._pool.open()
            self._opened = True

    async def _migrate(self, db: AsyncConnection[Any]) -> None:
        sql = self._sql
        async with db.transaction():
            # Two processes opening a new database take turns: CREATE ... IF NOT EXISTS
            # alone races on the catalogue.
            await db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (sql.lock,))
            await db.execute(sql.create_schema)
            await db.execute(sql.create_version)
            cursor = await db.execute(sql.read_version)
            row = await cursor.fetchone()
            found = int(row[0]) if row is not None and row[0] is not None else 0
            if found > VERSION:
                raise StoreFormatError(
                    f"the PostgreSQL store at {self.where} (schema {sql.schema!r}) holds "
                    f"tables of version {found}, made by a newer roomkit; this one reads "
                    f"version {VERSION}: upgrade roomkit in this process (nothing was read or "
                    f"written)"
                )
            for version in range(found + 1, VERSION + 1):
                for statement in sql.migrations[version]:
                    await db.execute(statement)
                await db.execute(sql.write_version, (version,))

    async def close(self) -> None:
        """Close the pool if it is the link's own; idempotent."""
        async with self._lock:
            self._opened = False
            if not self._borrowed and self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection of the pool; server and network faults become store errors."""
        await self.open()
        assert self._pool is not None
        try:
            async with self._pool.connection() as db:
                yield db
        except _LOST as error:
            raise self.unavailable(error) from error

    def unavailable(self, error: BaseException) -> StoreUnavailableError:
        """The error of a store the server of which did not answer with ``error``."""
        return StoreUnavailableError(
            f"the PostgreSQL store at {self.where} is unavailable ({_first_line(error)}): "
            f"check that the server runs and accepts connections"
        )


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]

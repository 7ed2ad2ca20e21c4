"""Rooms, rosters, bindings, history and the turn journal in a PostgreSQL database.

:class:`PostgresRoomStore` keeps what :class:`~roomkit.stores.sqlite._rooms.SQLiteRoomStore`
keeps, in tables of a PostgreSQL schema, and records the turns in flight
(:class:`~roomkit.core.store.TurnJournal`) so that a restarted process can finish them. Any
number of processes share it (agents writing, a desk reading rosters), and the schema may be
the one a :class:`~roomkit.stores.postgres._requests.PostgresStore` uses: the
tables here are prefixed ``roomkit_`` and none is shared.

Every write commits before it returns (autocommit on a pooled connection); the two writes
that must not be split (a message with the turns it starts, a turn's end with its reply) are
one transaction each, and so is a round of lease renewals (one commit however many turns it
renews).

Needs the ``postgres`` extra (``pip install -e '.[postgres]'`` in roomkit's checkout)::

    async with PostgresRoomStore("postgresql://app:secret@db.internal/app") as rooms:
        kit = RoomKit(store=rooms)
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from roomkit.models.event_ids import has_event_node, reserve_event_ids
from roomkit.stores._sql_rooms import Run, SQLRooms
from roomkit.stores._url import request_store
from roomkit.stores.postgres._dsn import check_schema_name, store_target
from roomkit.stores.postgres._link import Link
from roomkit.stores.postgres._migrate import migrate
from roomkit.stores.postgres._room_sql import VERSION, RoomStatements
from roomkit.stores.postgres._schema import read_back, stored

if TYPE_CHECKING:
    from roomkit.stores.postgres._requests import PostgresStore

__all__ = ["PostgresRoomStore"]


class PostgresRoomStore(SQLRooms):
    """A :class:`~roomkit.core.store.RoomStore` and turn journal in a PostgreSQL database.

    The store connects on first use, or with :meth:`open` / ``async with``; the tables are
    created (or migrated) then. Events keep their ids and are listed in the order they were
    added; opening the store makes the ids of events created from then on exceed every
    stored id, and gives the process the node number that keeps its event ids apart from
    those of the other processes on the store.

    Args:
        dsn_or_pool: a ``postgresql://`` / ``postgres://`` URL or ``key=value`` string (the
            store's own pool), or a ``psycopg_pool.AsyncConnectionPool`` (borrowed).
        schema: the PostgreSQL schema of the tables; created if missing.
        pool_size: the most connections the store's own pool opens; more calls at once queue
            for one, and a call that queues 60 s fails with
            :class:`~roomkit.core.exceptions.StoreUnavailableError` saying the pool was busy.
            ``None`` (the default) takes the URL's ``?pool_size=``, else 8.
        connect_timeout: seconds a connection may take to open, and, after a fault, a call
            may wait for one of the pool's (a busy pool lets calls queue for longer).
            ``None`` (the default) takes the URL's ``?connect_timeout=``, else 5.

    Raises:
        TypeError, ValueError: an argument is not one the store takes; or the URL's
            ``pool_size`` or ``connect_timeout`` is not, or is given beside the argument.
    """

    _sql: RoomStatements
    _taken = psycopg.errors.UniqueViolation

    def __init__(
        self,
        dsn_or_pool: str | AsyncConnectionPool[Any],
        *,
        schema: str = "public",
        pool_size: int | None = None,
        connect_timeout: float | None = None,
    ) -> None:
        target = store_target(dsn_or_pool, pool_size=pool_size, connect_timeout=connect_timeout)
        self.schema = check_schema_name(schema)
        """The PostgreSQL schema of the tables."""
        self._sql = RoomStatements(self.schema)
        self._link = Link(
            target.target,
            self._prepare,
            pool_size=8 if target.pool_size is None else target.pool_size,
            connect_timeout=target.connect_timeout,
            schema=self.schema,
        )
        self.where = self._link.where
        """The server and database, without the password."""

    @classmethod
    def beside(cls, store: PostgresStore) -> PostgresRoomStore:
        """The room store in ``store``'s database and schema, on ``store``'s pool.

        The two stores share one pool of connections (what :func:`roomkit.stores.open_url`
        opens): opening the room store opens ``store``, and closing the room store leaves the
        pool to ``store``, whose :meth:`~PostgresStore.close` closes it for both.

        Args:
            store: the pending-request store whose pool and schema the room store uses.

        Raises:
            TypeError: ``store`` is not a :class:`~roomkit.stores.postgres.PostgresStore`.
        """
        from roomkit.stores.postgres._requests import PostgresStore

        shared = request_store(store, PostgresStore)._link  # one back end's parts share it
        rooms = cls(shared.dsn, schema=store.schema)
        rooms._link = Link(
            shared,
            rooms._prepare,
            pool_size=1,
            connect_timeout=shared.connect_timeout,
            schema=rooms.schema,
        )
        return rooms

    @property
    def pool_size(self) -> int:
        """The most connections of the store's pool (or the ``max_size`` of the pool given,
        or of the request store's the room store opened ``beside``)."""
        return self._link.pool_size

    @property
    def connect_timeout(self) -> float:
        """Seconds a connection may take to open."""
        return self._link.connect_timeout

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, and create or migrate the tables; does nothing when open.

        Raises:
            StoreError: the server, the user, the password or the database is wrong, or the
                user may not make (or use) the tables; the message says what to grant.
            StoreFormatError: the tables were made by a newer version of roomkit.
        """
        fresh = not self._link.opened
        try:
            await self._link.open()
        except BaseException:
            # The caller of ``async with`` gets no store to close: an opening that fails
            # (or is cancelled) closes the pool it started.
            if fresh:
                await self._link.release()
            raise

    async def close(self) -> None:
        """Close the store's own pool; a later call opens it again."""
        await self._link.close()

    async def _prepare(self, db: AsyncConnection[Any], where: str) -> None:
        await migrate(db, self._sql, where=where, version=VERSION)
        cursor = await db.execute(self._sql.last_event_id)
        row = await cursor.fetchone()
        node = None
        if not has_event_node():
            cursor = await db.execute(self._sql.take_event_node)
            taken = await cursor.fetchone()
            node = None if taken is None else int(taken[0])
        reserve_event_ids(int(row[0]) if row is not None else 0, node=node)

    async def _read(self, statement: str, params: Any = ()) -> list[Any]:
        return await self._write(statement, params)

    async def _write(self, statement: str, params: Any, *, missing: str = "") -> list[Any]:
        try:
            async with self._link.connection() as db:
                return await _run(db, statement, params)
        except psycopg.errors.ForeignKeyViolation:
            raise KeyError(missing) from None

    @asynccontextmanager
    async def _transaction(self, missing: str) -> AsyncIterator[Run]:
        try:
            async with self._link.connection() as db, db.transaction():
                yield functools.partial(_run, db)
        except psycopg.errors.ForeignKeyViolation:
            raise KeyError(missing) from None


async def _run(db: AsyncConnection[Any], statement: str, params: Any) -> list[Any]:
    """Run one statement on ``db``; its rows, each text as it was given.

    PostgreSQL text holds no NUL: every text, an id as much as a message (a sender, a room,
    a participant's name, a turn's actor), is stored escaped when it holds one, as a
    request's texts are, and read back as given; a lookup escapes its key the same way.
    """
    cursor = await db.execute(statement, tuple(_escaped(param) for param in params))
    if cursor.description is None:
        return []
    return [tuple(read_back(value) for value in row) for row in await cursor.fetchall()]


def _escaped(param: Any) -> Any:
    if isinstance(param, str):
        return stored(param)
    if isinstance(param, list):  # the ids of a renewal, given as one array
        return [stored(item) if isinstance(item, str) else item for item in param]
    return param

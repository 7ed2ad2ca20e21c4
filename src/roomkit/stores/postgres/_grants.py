"""The PostgreSQL store's standing grants: the table ``roomkit_grants`` in the store's schema,
on the store's own pool.

The table is made on the first add of each store object (under an advisory lock, so that
processes starting together do not race on it); a table made with 32-bit counts
(``integer``, by an earlier build) is widened to ``bigint`` then, so that it holds every
``max_uses`` a scope takes (up to 2^53). A use is one ``UPDATE ... WHERE``
(unrevoked, unexpired, not used up) ``RETURNING``: the row's lock makes it a check-and-set
among every process. Time is the store's: the server's clock as the statement runs, unless
the store was given a ``clock=``. PostgreSQL text holds no NUL: a tool or a revoker's name
holding one is stored escaped (:func:`~roomkit.stores.postgres._schema.stored`) and read
back as given, as a request's texts are.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from roomkit.stores._checks import check_grant_text, check_revoker
from roomkit.stores._grant_rows import grant_from_row, readable_grants
from roomkit.stores.grants import COLUMNS, Grant, ListingGrants, check_grant_id
from roomkit.stores.postgres._schema import read_back, stored

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresGrants"]

_NOW = "COALESCE(%(now)s::double precision, extract(epoch FROM statement_timestamp()))"
"""The store's now in a statement: the clock given to the store, else the server's."""


class PostgresGrants(ListingGrants):
    """The grants in a PostgreSQL store's schema (see :mod:`~roomkit.stores.grants`)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        table = f'"{store.schema}".roomkit_grants'
        self._table = table
        self._made = False
        self._schema = (
            f"CREATE TABLE IF NOT EXISTS {table} (grant_id text PRIMARY KEY, tool text NOT NULL, "
            "expires_at double precision NOT NULL, max_uses bigint, "
            "uses bigint NOT NULL DEFAULT 0, created_at double precision NOT NULL, "
            "revoked_at double precision, revoked_by text, body text NOT NULL)"
        )
        # A table made when the counts were 32-bit: widened once (a rewrite of the table).
        self._narrow = (
            "SELECT 1 FROM pg_attribute WHERE attrelid = %(table)s::regclass "
            "AND attname IN ('max_uses', 'uses') AND atttypid = 'integer'::regtype"
        )
        self._widen = (
            f"ALTER TABLE {table} ALTER COLUMN max_uses TYPE bigint, ALTER COLUMN uses TYPE bigint"
        )
        self._index = (
            f'CREATE INDEX IF NOT EXISTS "roomkit_grants_tool" ON {table} (tool, expires_at)'
        )
        self._live = (
            f"revoked_at IS NULL AND expires_at > {_NOW} AND (max_uses IS NULL OR uses < max_uses)"
        )

    def clock(self) -> float:
        """The store's clock: grants expire on it."""
        return float(self._store.clock())

    def _now(self) -> float | None:
        """The time a statement judges expiry by; ``None``: the server's, as it runs."""
        at: float | None = self._store._judged_at()
        return at

    async def _rows(self, statement: str, parameters: Any, *, make: bool = False) -> list[Any]:
        """The rows of one statement (its row count when it returns none). Only an add
        (``make``) makes the table: a read or a change of a schema without one finds no
        grant, at the cost of one round trip."""
        from psycopg.errors import UndefinedTable

        store = self._store
        await store._ready()
        async with store._link.connection() as db:
            if make:
                await self._make(db)
            try:
                cursor = await db.execute(statement, parameters)
            except UndefinedTable:
                return []
            if cursor.description is None:
                return [cursor.rowcount]
            return [_as_given(row) for row in await cursor.fetchall()]

    async def _make(self, db: AsyncConnection[Any]) -> None:
        """Make the table and its index on ``db`` once."""
        if not self._made:
            await self._making(db)
            self._made = True

    async def _making(self, db: AsyncConnection[Any]) -> None:
        """Make the table and its index on ``db`` unless they are there (in its transaction
        when one is open, as a savepoint)."""
        async with db.transaction():
            lock = f"{self._store.schema}.roomkit_grants"
            await db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock,))
            await db.execute(self._schema)
            narrow = await db.execute(self._narrow, {"table": self._table})
            if await narrow.fetchone() is not None:
                await db.execute(self._widen)
            await db.execute(self._index)

    async def add_in(self, db: AsyncConnection[Any], grant: Grant) -> None:
        """Record ``grant`` on ``db`` inside its open transaction (the table made first when
        missing): it commits (or rolls back) with the rest of it. A grant with its id
        recorded already is left as it is.

        Raises:
            psycopg.Error: the server refused it (the caller's transaction is aborted).
        """
        if not self._made:
            # Not remembered as made: the transaction it is made in may yet roll back.
            await self._making(db)
        await db.execute(
            f"INSERT INTO {self._table} (grant_id, tool, expires_at, max_uses, uses, "
            f"created_at, body) VALUES (%(id)s, %(tool)s, %(expires)s, %(max)s, %(uses)s, "
            f"{_NOW}, %(body)s) ON CONFLICT (grant_id) DO NOTHING",
            self._row(grant),
        )

    def _row(self, grant: Grant) -> dict[str, Any]:
        """The parameters of ``grant``'s row."""
        return {
            "id": grant.grant_id,
            "tool": stored(grant.tool),
            "expires": grant.expires_at,
            "max": grant.max_uses,
            "uses": grant.uses,
            "now": self._now(),
            "body": grant.body(),
        }

    async def add(self, grant: Grant) -> Grant:
        from psycopg.errors import UniqueViolation

        check_grant_text(grant)
        try:
            rows = await self._rows(
                f"INSERT INTO {self._table} (grant_id, tool, expires_at, max_uses, uses, "
                f"created_at, body) VALUES (%(id)s, %(tool)s, %(expires)s, %(max)s, %(uses)s, "
                f"{_NOW}, %(body)s) RETURNING {COLUMNS}",
                self._row(grant),
                make=True,
            )
        except UniqueViolation:
            raise ValueError(f"grant {grant.grant_id!r} is recorded already") from None
        return grant_from_row(rows[0])

    async def get(self, grant_id: str) -> Grant | None:
        rows = await self._rows(
            f"SELECT {COLUMNS} FROM {self._table} WHERE grant_id = %(id)s",
            {"id": check_grant_id(grant_id)},
        )
        return grant_from_row(rows[0]) if rows else None

    async def _newest(
        self, tool: str | None, live: bool, limit: int | None
    ) -> builtins.list[Grant]:
        where = ["(%(tool)s::text IS NULL OR tool = %(tool)s::text)"]
        if live:
            where.append(self._live)
        cut = "" if limit is None else f" LIMIT {limit}"
        rows = await self._rows(
            f"SELECT {COLUMNS} FROM {self._table} WHERE {' AND '.join(where)} "
            f"ORDER BY created_at DESC, grant_id{cut}",
            {"tool": stored(tool), "now": self._now()},
        )
        return readable_grants(rows, grant_from_row)

    async def revoke(self, grant_id: str, *, by: str | None = None) -> bool:
        check_revoker(by)
        rows = await self._rows(
            f"UPDATE {self._table} SET revoked_at = {_NOW}, revoked_by = %(by)s "
            "WHERE grant_id = %(id)s AND revoked_at IS NULL",
            {"id": check_grant_id(grant_id), "by": stored(by), "now": self._now()},
        )
        return bool(rows and rows[0])

    async def use(self, grant_id: str) -> Grant | None:
        rows = await self._rows(self._use, self._using(grant_id))
        return grant_from_row(rows[0]) if rows else None

    async def use_in(self, db: AsyncConnection[Any], grant_id: str) -> Grant | None:
        """:meth:`use`, on ``db`` inside its open transaction: the use commits (or rolls
        back) with the rest of it. The grant with the use counted, or ``None`` when it
        covers nothing now.

        Raises:
            psycopg.errors.UndefinedTable: the schema has no grants table (the caller's
                transaction is aborted).
        """
        cursor = await db.execute(self._use, self._using(grant_id))
        row = await cursor.fetchone()
        return None if row is None else grant_from_row(_as_given(row))

    @property
    def _use(self) -> str:
        return (
            f"UPDATE {self._table} SET uses = uses + 1 WHERE grant_id = %(id)s AND "
            f"{self._live} RETURNING {COLUMNS}"
        )

    def _using(self, grant_id: str) -> dict[str, Any]:
        return {"id": check_grant_id(grant_id), "now": self._now()}


def _as_given(row: Any) -> tuple[Any, ...]:
    """A row of the table with its texts as they were given (see :func:`stored`)."""
    return tuple(read_back(value) for value in row)

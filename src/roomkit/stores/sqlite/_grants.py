"""The SQLite store's standing grants: the table ``roomkit_grants`` in the store's file.

The grants are a part of the store on its one connection: a change runs as one of the
store's writes (in its ``BEGIN IMMEDIATE`` transaction), a read in one of its sessions. A
use is one ``UPDATE ... WHERE`` (unrevoked, unexpired at the store's now, not used up)
``RETURNING``: SQLite's write lock makes it a check-and-set among every process on the file.

The table is made at the grants' first call. A table the grants cannot use (made by
something else, with other columns) fails their own calls with
:class:`~roomkit.core.exceptions.StoreUnavailableError`, and no other write of the store.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from roomkit.core.exceptions import StoreError, StoreUnavailableError
from roomkit.stores._checks import check_grant_text, check_revoker
from roomkit.stores._grant_rows import grant_from_row, readable_grants
from roomkit.stores.grants import COLUMNS, Grant, ListingGrants, check_grant_id
from roomkit.stores.sqlite._link import fetch_all, query
from roomkit.stores.sqlite._part import Part

__all__ = ["SQLiteGrants"]

T = TypeVar("T")

_SCHEMA = (
    """
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
)""",
    "CREATE INDEX IF NOT EXISTS roomkit_grants_tool ON roomkit_grants (tool, expires_at)",
)

_LIVE = "revoked_at IS NULL AND expires_at > ? AND (max_uses IS NULL OR uses < max_uses)"


_LIVE_ON_TOOL = f"SELECT 1 FROM roomkit_grants WHERE tool = ? AND {_LIVE} LIMIT 1"
_RECORDED = "SELECT 1 FROM roomkit_grants WHERE grant_id = ?"
_GRANTS_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'roomkit_grants'"


@dataclass(slots=True, eq=False)
class SQLiteGrants(Part, ListingGrants):
    """The grants in a SQLite store's file (see :mod:`~roomkit.stores.grants`)."""

    clock: Callable[[], float]
    """The store's clock: grants expire on it."""
    path: str
    """The database file, for error messages."""
    _made: bool = field(default=False, init=False)
    _table: bool = field(default=False, init=False)
    """The table was found in the file: the look for live grants reads it straight away."""

    def live_on(self, db: sqlite3.Connection, tool: str, now: float) -> bool:
        """Whether a live grant may name ``tool``, read inside one of the store's writes at
        its ``now``. No table yet: none does. A table the grants cannot read: one may (the
        grants' own calls then say what is wrong with it).

        Until the table is found, the look asks the schema first (a statement naming a
        missing table costs far more, failing); once found, it reads the table, and a table
        gone since (another file opened at the path) sends it back to asking.
        """
        if not self._table:
            if not query(db, _GRANTS_TABLE):
                return False
            self._table = True
        try:
            return bool(query(db, _LIVE_ON_TOOL, (tool, now)))
        except sqlite3.OperationalError as error:
            if getattr(error, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_ERROR:
                raise
            self._table = bool(query(db, _GRANTS_TABLE))
            return self._table

    async def add(self, grant: Grant) -> Grant:
        """Record ``grant``; see :meth:`GrantStore.add`.

        Raises:
            ValueError: a grant with its id is recorded already.
            StoreError: the database refused the row by another constraint (one the file
                holds: a trigger's, a CHECK); the message quotes SQLite, and nothing was
                written.
            InvalidTextError: a text of the grant holds a lone surrogate (nothing is
                written).
            StoreUnavailableError: the store cannot be reached.
        """
        check_grant_text(grant)

        def add(db: sqlite3.Connection, now: float) -> tuple[Any, ...] | Exception:
            row = _row(grant, now)
            try:
                db.execute(
                    "INSERT INTO roomkit_grants (grant_id, tool, expires_at, max_uses, uses, "
                    "created_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*row, grant.body()),
                )
            except sqlite3.IntegrityError as error:
                # Returned, and raised outside the write, which the store's others share.
                # Only an id recorded already is a duplicate: any other constraint the file
                # holds is said as SQLite says it.
                if query(db, _RECORDED, (grant.grant_id,)):
                    return ValueError(f"grant {grant.grant_id!r} is recorded already")
                return StoreError(
                    f"grant {grant.grant_id!r} could not be recorded, the database refused "
                    f"it: {error}; nothing was written"
                )
            return row

        row = await self._change(add)
        if isinstance(row, Exception):
            raise row
        return grant_from_row((*row, None, None, grant.body()))

    def add_in(self, db: sqlite3.Connection, grant: Grant, now: float) -> None:
        """Record ``grant`` inside one of the store's writes at its ``now`` (the table made
        first when missing): it commits (or rolls back) with the rest of that write. A grant
        with its id recorded already is left as it is.

        Raises:
            StoreUnavailableError: the table is not one the grants can use.
        """
        with self._own_faults():
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute(
                "INSERT INTO roomkit_grants (grant_id, tool, expires_at, max_uses, uses, "
                "created_at, body) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (grant_id) DO NOTHING",
                (*_row(grant, now), grant.body()),
            )

    async def get(self, grant_id: str) -> Grant | None:
        check_grant_id(grant_id)
        rows = await self._read(
            f"SELECT {COLUMNS} FROM roomkit_grants WHERE grant_id = ?", (grant_id,)
        )
        return grant_from_row(rows[0]) if rows else None

    async def _newest(
        self, tool: str | None, live: bool, limit: int | None
    ) -> builtins.list[Grant]:
        where: builtins.list[str] = []
        parameters: builtins.list[Any] = []
        if tool is not None:
            where.append("tool = ?")
            parameters.append(tool)
        if live:
            where.append(_LIVE)
            parameters.append(float(self.clock()))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        cut = "" if limit is None else f" LIMIT {limit}"
        rows = await self._read(
            f"SELECT {COLUMNS} FROM roomkit_grants{clause} ORDER BY created_at DESC, grant_id{cut}",
            parameters,
        )
        return readable_grants(rows, grant_from_row)

    async def revoke(self, grant_id: str, *, by: str | None = None) -> bool:
        check_grant_id(grant_id)
        check_revoker(by)

        def revoke(db: sqlite3.Connection, now: float) -> bool:
            cursor = db.execute(
                "UPDATE roomkit_grants SET revoked_at = ?, revoked_by = ? "
                "WHERE grant_id = ? AND revoked_at IS NULL",
                (now, by, grant_id),
            )
            return cursor.rowcount > 0

        return bool(await self._change(revoke))

    async def use(self, grant_id: str) -> Grant | None:
        check_grant_id(grant_id)
        return await self._change(lambda db, now: self.use_in(db, grant_id, now))

    def use_in(self, db: sqlite3.Connection, grant_id: str, now: float) -> Grant | None:
        """:meth:`use`, inside one of the store's writes at its ``now``: the use commits
        (or rolls back) with the rest of that write. The grant with the use counted, or
        ``None`` when it covers nothing now.

        Raises:
            StoreUnavailableError: the table is not one the grants can use.
        """
        with self._own_faults():
            rows = query(
                db,
                f"UPDATE roomkit_grants SET uses = uses + 1 WHERE grant_id = ? AND {_LIVE} "
                f"RETURNING {COLUMNS}",
                (grant_id, now),
            )
        return grant_from_row(rows[0]) if rows else None

    async def _change(self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        """``work`` as one of the store's writes, after the table is made."""
        await self._make()

        def change(db: sqlite3.Connection, now: float) -> T:
            with self._own_faults():
                return work(db, now)

        result: T = await self.write(change)
        return result

    async def _read(self, statement: str, parameters: Sequence[Any]) -> Sequence[Any]:
        async with self.session() as db:
            # A read makes no table: with none in the file, no grant was ever recorded.
            if not self._made and not await fetch_all(db, _GRANTS_TABLE):
                return []
            with self._own_faults():
                return await fetch_all(db, statement, parameters)

    async def _make(self) -> None:
        """Make the table and its index once, in a write of the store's."""
        if self._made:
            return

        def make(db: sqlite3.Connection, now: float) -> None:
            with self._own_faults():
                for statement in _SCHEMA:
                    db.execute(statement)

        await self.write(make)
        self._made = True

    @contextmanager
    def _own_faults(self) -> Iterator[None]:
        """A grants statement that fails on the table itself (a table of the name made by
        something else) fails alone, as the store's refusal; SQLite failing as a whole
        (locks, I/O) leaves as it is, and the store handles it."""
        try:
            yield
        except sqlite3.OperationalError as error:
            if getattr(error, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_ERROR:
                raise
            raise StoreUnavailableError(
                f"The grants in {self.path!r} cannot be read or written ({error}): the "
                "table roomkit_grants is not one roomkit made; move it aside and the store "
                "makes it anew"
            ) from error


def _row(grant: Grant, now: float) -> tuple[Any, ...]:
    """The columns of ``grant``'s row made at ``now``, up to its body."""
    return (grant.grant_id, grant.tool, grant.expires_at, grant.max_uses, grant.uses, now)

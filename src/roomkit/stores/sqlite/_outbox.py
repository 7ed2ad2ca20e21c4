"""The SQLite store's outbox: the table ``roomkit_outbox`` in the store's database file.

The outbox is a part of the store on its one connection (see :mod:`._part`): a change runs
as one of the store's writes, in its ``BEGIN IMMEDIATE`` transaction (under its checks for
moved files, taking turns with its other writes), and a read in one of its sessions. A
change waits for no disk (:class:`~._batch.Unsynced`): a delivery takes four or five of
them, one after the other, between a request's creation and its notice's send. A claim is
one ``UPDATE ... RETURNING`` per lane inside that transaction: SQLite's write lock makes it
a check-and-set among every process on the file. An index on each row's lane (read from its
body) and due time finds a lane's items due without passing over another's.
Each claim marks the rows it takes with its token (the column ``claim``, which a table made
before it gains at the outbox's first change): one whose caller never heard of it (cancelled
as it committed) hands them to its owner's next claim (:mod:`~roomkit.stores._lost_claims`).
The store's own purge drops what is done (:func:`purge_outbox`), in its transaction.

The table is made at the outbox's first change. A row the table refuses (a trigger, a
constraint) or a table the outbox cannot use fails the outbox's own call with
:class:`~roomkit.core.exceptions.StoreUnavailableError`, and no other write of the store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores._lost_claims import HeardClaims, Sent, held_by
from roomkit.stores.outbox import (
    COLUMNS,
    IS_ENDING,
    Claim,
    EndingStatements,
    OutboxItem,
    item_from_row,
)
from roomkit.stores.sqlite._batch import Undo, Unsynced
from roomkit.stores.sqlite._link import fetch_all, query
from roomkit.stores.sqlite._part import Part

__all__ = ["SQLiteOutbox", "add_items", "purge_outbox"]

T = TypeVar("T")

_LANE = "COALESCE(json_extract(body, '$.surface'), '')"
"""A row's lane, as :func:`~roomkit.stores.outbox.lane_of` has it."""

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS roomkit_outbox (
    item_id TEXT PRIMARY KEY,
    pending_id TEXT NOT NULL,
    due REAL NOT NULL,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    receipt TEXT,
    owner TEXT,
    claim TEXT
)""",
    "CREATE INDEX IF NOT EXISTS roomkit_outbox_due ON roomkit_outbox (due) WHERE done = 0",
    "CREATE INDEX IF NOT EXISTS roomkit_outbox_request ON roomkit_outbox (pending_id)",
    f"CREATE INDEX IF NOT EXISTS roomkit_outbox_endings ON roomkit_outbox (created) "
    f"WHERE {IS_ENDING}",
    f"CREATE INDEX IF NOT EXISTS roomkit_outbox_lanes ON roomkit_outbox ({_LANE}, due) "
    "WHERE done = 0",
)

_ENDINGS = EndingStatements.on("roomkit_outbox", marker="?", done="done = 1")

_HAS_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'roomkit_outbox'"

_ADD = (
    "INSERT INTO roomkit_outbox (item_id, pending_id, due, body, attempts, created) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (item_id) DO NOTHING"
)


def _claim(where: str = "") -> str:
    """A claim of the rows due (``where`` narrows them); parameters: the lease's end, the
    owner, the claim's token, now, what ``where`` takes, the limit."""
    return (
        "UPDATE roomkit_outbox SET due = ?, owner = ?, claim = ? WHERE item_id IN ("
        f"SELECT item_id FROM roomkit_outbox WHERE done = 0 AND due <= ?{where} "
        f"ORDER BY due LIMIT ?) RETURNING {COLUMNS}"
    )


_CLAIM_LANE = _claim(f" AND {_LANE} = ?")
_TAKEN_BY = (
    "UPDATE roomkit_outbox SET due = ? WHERE claim = ? AND owner = ? AND done = 0 "
    f"AND due > ? AND due <= ? RETURNING {COLUMNS}"
)
"""Lease anew (until the first parameter) the rows a lost claim (its token, its owner) took
and holds still: leased past now, until its lease's end or a later claim's that handed them
over without hearing back, whatever their order (the last two parameters, see
:func:`~roomkit.stores._lost_claims.held_by`)."""
_FIRST = f"SELECT due FROM roomkit_outbox WHERE done = 0 AND {_LANE} = ? ORDER BY due LIMIT 1"


def _lanes(count: int) -> str:
    return f" AND {_LANE} NOT IN ({', '.join('?' * count)})"


@dataclass(slots=True, eq=False)
class SQLiteOutbox(Part, HeardClaims):
    """The outbox in a SQLite store's file (see :mod:`~roomkit.stores.outbox`)."""

    path: str
    """The database file, for error messages."""
    _made: bool = field(default=False, init=False)
    """The table was made (or brought up to date): a change need not make it."""
    _found: bool = field(default=False, init=False)
    """The table was found: a read need not look for it."""
    _unanswered: dict[str, Sent] = field(default_factory=dict, init=False)

    async def add(self, items: Sequence[OutboxItem]) -> int:
        rows = _rows(items)
        if not rows:
            return 0

        def add(db: sqlite3.Connection) -> int:
            before = db.total_changes
            db.executemany(_ADD, rows)
            return db.total_changes - before

        return await self._change(add)

    async def _take(self, claim: Claim, token: str) -> list[OutboxItem]:
        owner, now, until, limit, lanes = claim
        named = dict(lanes or {})

        def take(db: sqlite3.Connection) -> list[OutboxItem]:
            rows = []
            for lane, room in named.items():
                if room > 0:
                    rows += query(db, _CLAIM_LANE, (until, owner, token, now, lane, room))
            if limit > 0:
                where = _lanes(len(named)) if named else ""
                rows += query(db, _claim(where), (until, owner, token, now, *named, limit))
            return [item_from_row(row) for row in rows]

        return await self._change(take)

    async def _taken_by(self, lost: Claim, token: str, claim: Claim) -> list[OutboxItem]:
        parameters = (claim.until, token, lost.owner, *held_by(lost, claim))

        def hand_over(db: sqlite3.Connection) -> list[OutboxItem]:
            return [item_from_row(row) for row in query(db, _TAKEN_BY, parameters)]

        return await self._change(hand_over)

    async def renew(
        self, item_id: str, owner: str, until: float, *, receipt: dict[str, Any] | None = None
    ) -> bool:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))

        def renew(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "UPDATE roomkit_outbox SET due = ?, receipt = coalesce(?, receipt) "
                "WHERE item_id = ? AND owner = ? AND done = 0",
                (until, text, item_id, owner),
            )
            return cursor.rowcount > 0

        return await self._change(renew)

    async def complete(self, item_id: str, receipt: dict[str, Any] | None) -> None:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))

        def complete(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE roomkit_outbox SET done = 1, receipt = ?, owner = NULL WHERE item_id = ?",
                (text, item_id),
            )

        await self._change(complete)

    async def postpone(
        self, item_id: str, due: float, receipt: dict[str, Any] | None = None
    ) -> None:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))

        def postpone(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE roomkit_outbox SET due = ?, attempts = attempts + 1, owner = NULL, "
                "receipt = coalesce(?, receipt) WHERE item_id = ? AND done = 0",
                (due, text, item_id),
            )

        await self._change(postpone)

    async def items_for(self, pending_id: str) -> list[OutboxItem]:
        statement = (
            f"SELECT {COLUMNS} FROM roomkit_outbox WHERE pending_id = ? ORDER BY created, item_id"
        )
        rows = await self._read([(statement, (pending_id,))])
        return [item_from_row(row) for row in rows[0]]

    async def next_due(self, lanes: Collection[str] | None = None) -> float | None:
        if lanes is None:
            found = await self._read([("SELECT MIN(due) FROM roomkit_outbox WHERE done = 0", ())])
        else:
            # Each lane's first due time, from the index of lanes.
            found = await self._read([(_FIRST, (lane,)) for lane in lanes])
        dues = [float(rows[0][0]) for rows in found if rows and rows[0][0] is not None]
        return min(dues, default=None)

    async def unended(self) -> list[str]:
        (rows,) = await self._read([(_ENDINGS.unended, ())])
        return [row[0] for row in rows]

    async def purge(self, before: float) -> int:
        return await self._change(lambda db: purge_outbox(db, before))

    async def aclose(self) -> None:
        """The connection is the store's: the store closes it."""

    async def _change(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` as one of the store's writes, committed without waiting for the disk;
        the first one makes the table first."""
        made = self._made

        def change(db: sqlite3.Connection, now: float) -> T:
            with self._own_faults():
                if not made:
                    _make_table(db)
                return work(db)

        try:
            result: T = await self.write(Unsynced(change))
        except StoreUnavailableError:
            # The table may be gone with the file it was in: the next change makes it anew.
            self._made = self._found = False
            raise
        self._made = True
        return result

    async def _read(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        """The rows of each statement, read in one of the store's sessions."""
        async with self.session() as db:
            if not (self._made or self._found):
                # A read makes no table: with none in the file, nothing was ever added.
                if not await fetch_all(db, _HAS_TABLE):
                    return [[] for _ in statements]
                self._found = True
            try:
                return [await fetch_all(db, sql, parameters) for sql, parameters in statements]
            except sqlite3.Error as error:
                if _of_the_file(error):
                    raise
                raise self._unusable(error) from error

    @contextmanager
    def _own_faults(self) -> Iterator[None]:
        """A statement of the outbox's that its table refuses fails the outbox's call alone,
        having written nothing; SQLite failing as a whole (locks, I/O) leaves as it is, and
        the store handles it."""
        try:
            yield
        except sqlite3.Error as error:
            if _of_the_file(error):
                raise
            raise Undo(self._unusable(error)) from error

    def _unusable(self, error: sqlite3.Error) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"The outbox in {self.path!r} cannot be read or written ({error}): check the "
            "table roomkit_outbox (a trigger or a constraint refusing its rows, or a table "
            "of that name roomkit did not make)"
        )


def _of_the_file(error: sqlite3.Error) -> bool:
    """Whether ``error`` is SQLite failing as a whole (a lock, I/O, the file), not a
    statement its table refuses (a constraint, a trigger, a missing column)."""
    if type(error) is sqlite3.DatabaseError:
        return True
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    return isinstance(error, sqlite3.OperationalError) and code != sqlite3.SQLITE_ERROR


def _make_table(db: sqlite3.Connection) -> None:
    for statement in _SCHEMA:
        db.execute(statement)
    columns = {row[1] for row in db.execute("PRAGMA table_info(roomkit_outbox)")}
    if "claim" not in columns:
        # A table made before claims carried a token: its rows' claims have none.
        db.execute("ALTER TABLE roomkit_outbox ADD COLUMN claim TEXT")


def _rows(items: Sequence[OutboxItem]) -> list[tuple[Any, ...]]:
    return [
        (item.item_id, item.pending_id, item.due, item.encoded_body(), item.attempts, item.created)
        for item in items
    ]


def add_items(db: sqlite3.Connection, items: Sequence[OutboxItem]) -> None:
    """Record the ``items`` not recorded yet, inside the caller's transaction (a write of
    the store's, whose entries they belong with). A file whose outbox was never used
    gains its table here, in the same transaction."""
    rows = _rows(items)
    if not rows:
        return
    if db.execute(_HAS_TABLE).fetchone() is None:
        _make_table(db)
    db.executemany(_ADD, rows)


def purge_outbox(db: sqlite3.Connection, before: float) -> int:
    """Drop every item of the requests whose ending was added before ``before`` and whose
    items are all done, inside the caller's transaction; how many items went.

    A file whose outbox was never used has no table: nothing to drop.
    """
    exists = db.execute(_HAS_TABLE).fetchone()
    return 0 if exists is None else db.execute(_ENDINGS.purge, (before,)).rowcount

"""The SQLite store's outbox: the table ``roomkit_outbox`` in the store's database file.

The outbox keeps a connection of its own to the file (the requests' connection and its
batching stay as they are). A claim is one ``UPDATE ... RETURNING`` per lane inside one
``BEGIN IMMEDIATE``: SQLite's write lock makes it a check-and-set among every process on
the file. An index on each row's lane (read from its body) and due time finds a lane's
items due without passing over another's.
The store's own purge drops what is done (:func:`purge_outbox`), in its transaction.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.outbox import (
    COLUMNS,
    IS_ENDING,
    Claim,
    ClaimingOutbox,
    EndingStatements,
    OutboxItem,
    item_from_row,
)
from roomkit.stores.sqlite._connect import retry_locked

__all__ = ["SQLiteOutbox", "add_items", "purge_outbox"]

_LANE = "COALESCE(json_extract(body, '$.surface'), '')"
"""A row's lane, as :func:`~roomkit.stores.outbox.lane_of` has it."""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS roomkit_outbox (
    item_id TEXT PRIMARY KEY,
    pending_id TEXT NOT NULL,
    due REAL NOT NULL,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    receipt TEXT,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS roomkit_outbox_due ON roomkit_outbox (due) WHERE done = 0;
CREATE INDEX IF NOT EXISTS roomkit_outbox_request ON roomkit_outbox (pending_id);
CREATE INDEX IF NOT EXISTS roomkit_outbox_endings ON roomkit_outbox (created)
    WHERE {IS_ENDING};
CREATE INDEX IF NOT EXISTS roomkit_outbox_lanes ON roomkit_outbox ({_LANE}, due)
    WHERE done = 0;
"""

_ENDINGS = EndingStatements.on("roomkit_outbox", marker="?", done="done = 1")

_HAS_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'roomkit_outbox'"

_ADD = (
    "INSERT INTO roomkit_outbox (item_id, pending_id, due, body, attempts, created) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (item_id) DO NOTHING"
)


def _claim(where: str = "") -> str:
    """A claim of the rows due (``where`` narrows them); parameters: the lease's end, the
    owner, now, what ``where`` takes, the limit."""
    return (
        "UPDATE roomkit_outbox SET due = ?, owner = ? WHERE item_id IN ("
        f"SELECT item_id FROM roomkit_outbox WHERE done = 0 AND due <= ?{where} "
        f"ORDER BY due LIMIT ?) RETURNING {COLUMNS}"
    )


_CLAIM_LANE = _claim(f" AND {_LANE} = ?")
_FIRST = f"SELECT due FROM roomkit_outbox WHERE done = 0 AND {_LANE} = ? ORDER BY due LIMIT 1"


def _lanes(count: int) -> str:
    return f" AND {_LANE} NOT IN ({', '.join('?' * count)})"


class SQLiteOutbox(ClaimingOutbox):
    """The outbox in a SQLite store's file (see
    :mod:`~roomkit.stores.outbox`)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.path: str = store.path
        self.busy_timeout: float = max(float(store.busy_timeout), 5.0)
        self._db: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()

    def _prepared(self) -> sqlite3.Connection:
        """A new connection to the file, in WAL mode, with the outbox's table."""
        db = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except BaseException:
            db.close()
            raise
        return db

    async def _run(self, work: Any, *args: Any) -> Any:
        self._store._check_open()  # refused, as the store's own calls, once it is closed
        async with self._lock:
            try:
                if self._db is None:
                    # Switching a new file to WAL is not covered by the busy timeout: retried.
                    prepare = functools.partial(asyncio.to_thread, self._prepared)
                    self._db = await retry_locked(prepare, self.busy_timeout)
                running = asyncio.ensure_future(
                    asyncio.to_thread(_in_transaction, self._db, work, *args)
                )
                try:
                    return await asyncio.shield(running)
                except asyncio.CancelledError:
                    # The thread runs on: the connection is handed on once it is done with it.
                    await asyncio.wait((running,))
                    raise
            except sqlite3.Error as error:
                if self._db is not None:
                    self._db.close()
                    self._db = None
                raise StoreUnavailableError(
                    f"The outbox in {self.path!r} cannot be written ({error}): check that the "
                    "file is writable and the disk not full"
                ) from error

    async def add(self, items: Sequence[OutboxItem]) -> int:
        rows = _rows(items)
        if not rows:
            return 0

        def add(db: sqlite3.Connection) -> int:
            before = db.total_changes
            db.executemany(_ADD, rows)
            return db.total_changes - before

        return int(await self._run(add))

    async def _claim_due(self, claim: Claim) -> list[OutboxItem]:
        owner, now, until, limit, lanes = claim
        named = dict(lanes or {})

        def take(db: sqlite3.Connection) -> list[OutboxItem]:
            rows = []
            for lane, room in named.items():
                if room > 0:
                    found = db.execute(_CLAIM_LANE, (until, owner, now, lane, room))
                    rows += found.fetchall()
            if limit > 0:
                others = db.execute(
                    _claim(_lanes(len(named)) if named else ""),
                    (until, owner, now, *named, limit),
                )
                rows += others.fetchall()
            return [item_from_row(row) for row in rows]

        claimed: list[OutboxItem] = await self._run(take)
        return claimed

    async def renew(self, item_id: str, owner: str, until: float) -> bool:
        def renew(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "UPDATE roomkit_outbox SET due = ? WHERE item_id = ? AND owner = ? AND done = 0",
                (until, item_id, owner),
            )
            return cursor.rowcount > 0

        return bool(await self._run(renew))

    async def complete(self, item_id: str, receipt: dict[str, Any] | None) -> None:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))

        def complete(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE roomkit_outbox SET done = 1, receipt = ?, owner = NULL WHERE item_id = ?",
                (text, item_id),
            )

        await self._run(complete)

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

        await self._run(postpone)

    async def items_for(self, pending_id: str) -> list[OutboxItem]:
        def read(db: sqlite3.Connection) -> list[OutboxItem]:
            rows = db.execute(
                f"SELECT {COLUMNS} FROM roomkit_outbox WHERE pending_id = ? "
                "ORDER BY created, item_id",
                (pending_id,),
            ).fetchall()
            return [item_from_row(row) for row in rows]

        found: list[OutboxItem] = await self._run(read)
        return found

    async def next_due(self, lanes: Collection[str] | None = None) -> float | None:
        named = None if lanes is None else list(lanes)

        def read(db: sqlite3.Connection) -> float | None:
            if named is None:
                row = db.execute("SELECT MIN(due) FROM roomkit_outbox WHERE done = 0").fetchone()
                return None if row[0] is None else float(row[0])
            # Each lane's first due time, from the index of lanes.
            firsts = [db.execute(_FIRST, (lane,)).fetchone() for lane in named]
            return min((float(first[0]) for first in firsts if first is not None), default=None)

        due: float | None = await self._run(read)
        return due

    async def unended(self) -> list[str]:
        def read(db: sqlite3.Connection) -> list[str]:
            return [row[0] for row in db.execute(_ENDINGS.unended)]

        found: list[str] = await self._run(read)
        return found

    async def purge(self, before: float) -> int:
        return int(await self._run(purge_outbox, before))

    async def aclose(self) -> None:
        async with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _in_transaction(db: sqlite3.Connection, work: Any, *args: Any) -> Any:
    """``work(db, *args)`` in a ``BEGIN IMMEDIATE`` transaction, committed when it returns."""
    db.execute("BEGIN IMMEDIATE")
    try:
        result = work(db, *args)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return result


def _rows(items: Sequence[OutboxItem]) -> list[tuple[Any, ...]]:
    return [
        (item.item_id, item.pending_id, item.due, item.encoded_body(), item.attempts, item.created)
        for item in items
    ]


def add_items(db: sqlite3.Connection, items: Sequence[OutboxItem]) -> None:
    """Record the ``items`` not recorded yet, inside the caller's transaction (a write of
    the store's, whose entries they belong with). A file whose outbox was never opened
    gains its table here, in the same transaction."""
    rows = _rows(items)
    if not rows:
        return
    exists = db.execute(_HAS_TABLE).fetchone()
    if exists is None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
    db.executemany(_ADD, rows)


def purge_outbox(db: sqlite3.Connection, before: float) -> int:
    """Drop every item of the requests whose ending was added before ``before`` and whose
    items are all done, inside the caller's transaction; how many items went.

    A file whose outbox was never opened has no table: nothing to drop.
    """
    exists = db.execute(_HAS_TABLE).fetchone()
    return 0 if exists is None else db.execute(_ENDINGS.purge, (before,)).rowcount

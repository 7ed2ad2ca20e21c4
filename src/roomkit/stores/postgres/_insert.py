"""The Postgres store's insert: a request's row and the start of its history, in one
transaction.

A request without a key is one INSERT, its ``created`` entry appended in the same
transaction (:func:`~roomkit.stores.postgres._history.append_chained`).
A request with a key first reads the key's holder: one still within its retention is
re-attached to (nothing is written); one past it is deleted, which frees the key. Another
create of the same key that commits first makes the INSERT write nothing, and the key is
read again, for up to ``_KEY_RACES`` rounds.

A request settled as it is made (a call decided without anyone) goes in with its outcome and
its whole history, its ``settled_at`` the insert's time, and notifies its creation and its
settle.

A request a standing grant covers (:func:`insert_granted`) is inserted in the transaction
that counts the grant's use, after the key is read: a key's holder is returned with no use
spent, and an insert that fails takes the use back with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection, Rollback

from roomkit.core.exceptions import StoreError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._records import FIELDS, encode
from roomkit.stores.base import PendingChangeKind
from roomkit.stores.grants import Grant
from roomkit.stores.postgres._feed import hint
from roomkit.stores.postgres._history import append_chained
from roomkit.stores.postgres._link import Link
from roomkit.stores.postgres._schema import Statements, decode_row, stored
from roomkit.stores.postgres._text import check_nul

__all__ = ["Clocks", "GrantUse", "insert_granted", "insert_request"]

GrantUse = Callable[
    [AsyncConnection[Any]], Awaitable[tuple[Grant, Sequence[dict[str, Any]]] | None]
]
"""Counts a grant's use inside the transaction open on the connection: the grant with the
use counted and the history the request starts with, or ``None`` when it covers nothing."""

_KEY_RACES = 3
"""Times an insert tries again when a create of the same key committed under it."""
_PENDING = PendingInputStatus.PENDING


@dataclass(frozen=True, slots=True)
class Clocks:
    """The store's readings an insert needs."""

    now: Callable[[], float]
    """The store's clock."""
    retained: Callable[[Any, float], bool]
    """Whether a key's holder settled at a time (its row's last column) is still retained at
    a reading of the clock."""
    judged_at: Callable[[], float | None]
    """The time a write judges by (``None``: the server's)."""


async def insert_request(
    link: Link,
    sql: Statements,
    request: PendingInput,
    history: tuple[dict[str, Any], ...],
    clocks: Clocks,
) -> tuple[PendingInput, bool]:
    """Insert ``request`` (checked already) with its ``history`` (checked already):
    ``(record, True)`` when it was created, ``(the key's retained holder, False)`` when
    there is one (then nothing is written).

    Raises:
        InvalidTextError: its id holds a NUL.
        StoreError: a request with this ``pending_id`` is already stored, or the key kept
            changing hands.
    """
    fields = encode(request)
    check_nul({"pending_id": request.pending_id})
    # Any other text may hold a NUL: it is stored escaped (and read back as given).
    values = [
        stored(value) if isinstance(value, str) else value
        for value in (fields[name] for name in FIELDS)
    ]
    clock, retained, judged_at = clocks.now, clocks.retained, clocks.judged_at
    chain = {request.pending_id: history}
    if request.key is None:
        # No key to re-attach to: one statement, and the history's rows.
        async with link.connection() as db, db.transaction():
            cursor = await db.execute(*_row(sql, request, values, clock()))
            if await cursor.fetchone() is None:
                raise StoreError(f"pending request {request.pending_id!r} is already stored")
            await append_chained(db, sql, chain, judged_at())
        return decode_row(values), True
    for _ in range(_KEY_RACES):
        async with link.connection() as db, db.transaction():
            now = clock()
            cursor = await db.execute(sql.select_by_key, (stored(request.key),))
            row = await cursor.fetchone()
            if row is not None:
                if retained(row[-1], now):
                    return decode_row(row), False
                # The key's holder is past its retention: it goes, the key is free.
                await db.execute(sql.delete, (row[FIELDS.index("pending_id")],))
            cursor = await db.execute(*_row(sql, request, values, now))
            if await cursor.fetchone() is not None:
                await append_chained(db, sql, chain, judged_at())
                return decode_row(values), True
            cursor = await db.execute(sql.exists, (request.pending_id,))
            if await cursor.fetchone() is not None:
                raise StoreError(f"pending request {request.pending_id!r} is already stored")
        # A create of the same key committed first: read it on the next round.
    raise StoreError(
        f"the key {request.key!r} kept changing hands while request "
        f"{request.pending_id!r} was being created: try again"
    )


async def insert_granted(
    link: Link,
    sql: Statements,
    request: PendingInput,
    use: GrantUse,
    clocks: Clocks,
) -> tuple[PendingInput, bool, Grant | None] | None:
    """Insert ``request`` (checked already) in the transaction that counts a grant's use
    (``use``): ``(record, True, grant)`` when it was created; ``(the key's retained holder,
    False, None)`` when there is one (nothing is written, no use spent); ``None`` when the
    grant covers nothing now (nothing is written).

    Raises:
        InvalidTextError: its id holds a NUL.
        StoreError: a request with this ``pending_id`` is already stored, or the key kept
            changing hands (the use is not counted).
        psycopg.Error: as ``use`` raises it (nothing is written).
    """
    fields = encode(request)
    check_nul({"pending_id": request.pending_id})
    values = [
        stored(value) if isinstance(value, str) else value
        for value in (fields[name] for name in FIELDS)
    ]
    for _ in range(_KEY_RACES):
        async with link.connection() as db, db.transaction():
            now = clocks.now()
            if request.key is not None:
                cursor = await db.execute(sql.select_by_key, (stored(request.key),))
                row = await cursor.fetchone()
                if row is not None:
                    if clocks.retained(row[-1], now):
                        return decode_row(row), False, None
                    await db.execute(sql.delete, (row[FIELDS.index("pending_id")],))
            used = await use(db)
            if used is None:
                return None
            grant, history = used
            cursor = await db.execute(*_row(sql, request, values, now))
            if await cursor.fetchone() is not None:
                await append_chained(db, sql, {request.pending_id: history}, clocks.judged_at())
                return decode_row(values), True, grant
            cursor = await db.execute(sql.exists, (request.pending_id,))
            if await cursor.fetchone() is not None:
                raise StoreError(f"pending request {request.pending_id!r} is already stored")
            # A create of the same key committed first: the use goes back, and the key is
            # read again on the next round.
            raise Rollback()
    raise StoreError(
        f"the key {request.key!r} kept changing hands while request "
        f"{request.pending_id!r} was being created: try again"
    )


def _row(
    sql: Statements, request: PendingInput, values: list[Any], now: float
) -> tuple[str, tuple[Any, ...]]:
    """The statement that inserts ``request`` (its stored ``values``) at ``now``, and its
    parameters: a pending request's, or one settled as it is made."""
    pending_id = request.pending_id
    created = (sql.channel, hint(PendingChangeKind.CREATED, pending_id))
    if request.status is _PENDING:
        return sql.insert, (*values, now, *created)
    settled = (sql.channel, hint(PendingChangeKind.SETTLED, pending_id))
    return sql.insert_settled, (*values, now, now, *created, *settled)

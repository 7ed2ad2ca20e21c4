"""The PostgreSQL store's outbox: the table ``roomkit_outbox`` in the store's schema
(version 3 of its tables, its index of endings version 4), on the store's own pool.

A claim is one ``UPDATE ... WHERE item_id IN (SELECT ... FOR UPDATE SKIP LOCKED)
RETURNING``: rows another process is claiming are skipped, never taken twice. A claim by
lanes takes each lane's due rows, earliest first, in the same statement; a row's lane is
read from its body, so a lane's claim passes over the due rows of the lanes in front of it
that are not being served (the index of due times is the version-3 table's). The store's
own purge drops what is done (:meth:`PostgresOutbox.purge`, on the connection it purges
with).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from roomkit.stores._checks import seconds
from roomkit.stores.outbox import (
    COLUMNS,
    KEEP_DONE,
    Claim,
    ClaimingOutbox,
    EndingStatements,
    OutboxItem,
    item_from_row,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresOutbox", "add_items"]

_LANE = "COALESCE(body::json ->> 'surface', '')"
"""A row's lane, as :func:`~roomkit.stores.outbox.lane_of` has it."""


class PostgresOutbox(ClaimingOutbox):
    """The outbox in a PostgreSQL store's schema (see
    :mod:`~roomkit.stores.outbox`)."""

    def __init__(self, store: Any, *, keep: float = KEEP_DONE) -> None:
        self._store = store
        self.keep = seconds("outbox_retention_seconds", keep, zero=True, finite=False)
        """Seconds a request's finished deliveries stay after its ending (the store's
        purge drops them)."""
        table = f'"{store.schema}".roomkit_outbox'
        self._table = table
        due = f"SELECT item_id FROM {table} WHERE NOT done AND due <= %(now)s"
        self._claim = (
            f"UPDATE {table} SET due = %(until)s, owner = %(owner)s WHERE item_id IN ("
            f"{due} ORDER BY due LIMIT %(limit)s FOR UPDATE SKIP LOCKED) RETURNING {COLUMNS}"
        )
        self._claim_lanes = (
            f"UPDATE {table} SET due = %(until)s, owner = %(owner)s WHERE item_id IN ("
            "SELECT c.item_id FROM unnest(%(lanes)s::text[], %(rooms)s::int[]) AS l(lane, room) "
            f"CROSS JOIN LATERAL ({due} AND {_LANE} = l.lane ORDER BY due LIMIT l.room "
            "FOR UPDATE SKIP LOCKED) AS c "
            f"UNION ALL SELECT o.item_id FROM ({due} AND {_LANE} <> ALL(%(lanes)s::text[]) "
            f"ORDER BY due LIMIT %(limit)s FOR UPDATE SKIP LOCKED) AS o) RETURNING {COLUMNS}"
        )
        self._first = (
            f"SELECT MIN(f.due) FROM unnest(%s::text[]) AS l(lane) CROSS JOIN LATERAL ("
            f"SELECT due FROM {table} WHERE NOT done AND {_LANE} = l.lane ORDER BY due LIMIT 1"
            ") AS f"
        )
        self._endings = EndingStatements.on(table, marker="%s", done="done")

    async def _count(self, statement: str, parameters: Any) -> int:
        await self._store._ready()
        async with self._store._link.connection() as db:
            cursor = await db.execute(statement, parameters)
            return int(cursor.rowcount)

    async def _rows(self, statement: str, parameters: Any = ()) -> list[Any]:
        await self._store._ready()
        async with self._store._link.connection() as db:
            cursor = await db.execute(statement, parameters)
            return list(await cursor.fetchall())

    async def add(self, items: Sequence[OutboxItem]) -> int:
        if not items:
            return 0
        await self._store._ready()
        async with self._store._link.connection() as db, db.transaction():
            return await add_items(db, self._store.schema, items)

    async def _claim_due(self, claim: Claim) -> list[OutboxItem]:
        owner, now, until, limit, lanes = claim
        parameters = {"until": until, "owner": owner, "now": now, "limit": limit}
        if lanes is None:
            rows = await self._rows(self._claim, parameters)
        else:
            parameters.update(lanes=list(lanes), rooms=[max(0, room) for room in lanes.values()])
            rows = await self._rows(self._claim_lanes, parameters)
        return [item_from_row(row) for row in rows]

    async def renew(self, item_id: str, owner: str, until: float) -> bool:
        statement = (
            f"UPDATE {self._table} SET due = %s WHERE item_id = %s AND owner = %s AND NOT done"
        )
        return await self._count(statement, (until, item_id, owner)) > 0

    async def complete(self, item_id: str, receipt: dict[str, Any] | None) -> None:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))
        statement = (
            f"UPDATE {self._table} SET done = true, receipt = %s, owner = NULL WHERE item_id = %s"
        )
        await self._count(statement, (text, item_id))

    async def postpone(
        self, item_id: str, due: float, receipt: dict[str, Any] | None = None
    ) -> None:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))
        statement = (
            f"UPDATE {self._table} SET due = %s, attempts = attempts + 1, owner = NULL, "
            "receipt = coalesce(%s, receipt) WHERE item_id = %s AND NOT done"
        )
        await self._count(statement, (due, text, item_id))

    async def items_for(self, pending_id: str) -> list[OutboxItem]:
        statement = (
            f"SELECT {COLUMNS} FROM {self._table} WHERE pending_id = %s ORDER BY created, item_id"
        )
        return [item_from_row(row) for row in await self._rows(statement, (pending_id,))]

    async def next_due(self, lanes: Collection[str] | None = None) -> float | None:
        if lanes is None:
            rows = await self._rows(f"SELECT MIN(due) FROM {self._table} WHERE NOT done")
        else:
            rows = await self._rows(self._first, (list(lanes),))
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    async def unended(self) -> list[str]:
        return [row[0] for row in await self._rows(self._endings.unended)]

    async def purge(self, before: float, *, db: AsyncConnection[Any] | None = None) -> int:
        """As :meth:`Outbox.purge`; on ``db`` when given (the store's purge passes its own)."""
        if db is None:
            return await self._count(self._endings.purge, (before,))
        cursor = await db.execute(self._endings.purge, (before,))
        return max(cursor.rowcount, 0)

    async def aclose(self) -> None:
        """The pool is the store's: the store closes it."""


async def add_items(db: AsyncConnection[Any], schema: str, items: Sequence[OutboxItem]) -> int:
    """Record the ``items`` not recorded yet in the outbox of the store whose tables live in
    ``schema``, inside the caller's transaction on ``db`` (a write of the store's, whose
    entries they belong with); how many were new."""
    new = 0
    for i in items:
        cursor = await db.execute(
            f'INSERT INTO "{schema}".roomkit_outbox (item_id, pending_id, due, body, attempts, '
            "created) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (item_id) DO NOTHING",
            (i.item_id, i.pending_id, i.due, i.encoded_body(), i.attempts, i.created),
        )
        new += cursor.rowcount
    return new

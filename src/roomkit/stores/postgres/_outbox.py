"""The PostgreSQL store's outbox: the table ``roomkit_outbox`` in the store's schema
(version 3 of its tables, its index of endings version 4), on the store's own pool.

A claim is one ``UPDATE ... WHERE item_id IN (SELECT ... FOR UPDATE SKIP LOCKED)
RETURNING``: rows another process is claiming are skipped, never taken twice. A claim by
lanes takes each lane's due rows, earliest first, in the same statement; a row's lane is
read from its body, so a lane's claim passes over the due rows of the lanes in front of it
that are not being served (the index of due times is the version-3 table's). Each claim
marks the rows it takes with its token (the column ``claim``, version 9): one whose reply a
cut connection lost hands them to its owner's next claim
(:mod:`~roomkit.stores._lost_claims`). The store's own purge drops what is done
(:meth:`PostgresOutbox.purge`, on the connection it purges with).

PostgreSQL text holds no NUL, and its JSON operators (the lane's) refuse the ``\\u0000``
that spells one in JSON: an item's id, and each text in its body, holding one (a delivery to
a person whose id has one) is stored escaped
(:func:`~roomkit.stores.postgres._schema.stored`) and read back as given, as a request's
texts are; a lane is looked up escaped the same way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from roomkit.stores._checks import seconds
from roomkit.stores._lost_claims import HeardClaims, held_by
from roomkit.stores.outbox import (
    COLUMNS,
    KEEP_DONE,
    Claim,
    EndingStatements,
    OutboxItem,
    item_from_row,
)
from roomkit.stores.postgres._schema import read_back, stored

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresOutbox", "add_items"]

_LANE = "COALESCE(body::json ->> 'surface', '')"
"""A row's lane, as :func:`~roomkit.stores.outbox.lane_of` has it."""


class PostgresOutbox(HeardClaims):
    """The outbox in a PostgreSQL store's schema (see
    :mod:`~roomkit.stores.outbox`)."""

    def __init__(self, store: Any, *, keep: float = KEEP_DONE) -> None:
        self._store = store
        self._unanswered = {}
        self.keep = seconds("outbox_retention_seconds", keep, zero=True, finite=False)
        """Seconds a request's finished deliveries stay after its ending (the store's
        purge drops them)."""
        table = f'"{store.schema}".roomkit_outbox'
        self._table = table
        due = f"SELECT item_id FROM {table} WHERE NOT done AND due <= %(now)s"
        take = f"UPDATE {table} SET due = %(until)s, owner = %(owner)s, claim = %(token)s"
        self._claim = (
            f"{take} WHERE item_id IN ("
            f"{due} ORDER BY due LIMIT %(limit)s FOR UPDATE SKIP LOCKED) RETURNING {COLUMNS}"
        )
        self._claim_lanes = (
            f"{take} WHERE item_id IN ("
            "SELECT c.item_id FROM unnest(%(lanes)s::text[], %(rooms)s::int[]) AS l(lane, room) "
            f"CROSS JOIN LATERAL ({due} AND {_LANE} = l.lane ORDER BY due LIMIT l.room "
            "FOR UPDATE SKIP LOCKED) AS c "
            f"UNION ALL SELECT o.item_id FROM ({due} AND {_LANE} <> ALL(%(lanes)s::text[]) "
            f"ORDER BY due LIMIT %(limit)s FOR UPDATE SKIP LOCKED) AS o) RETURNING {COLUMNS}"
        )
        # A lost claim's rows, leased past now, until its lease's end or that of a later
        # claim that handed them over without hearing back, whichever is later.
        self._hand_over = (
            f"UPDATE {table} SET due = %s WHERE claim = %s AND owner = %s AND NOT done "
            f"AND due > %s AND due <= %s RETURNING {COLUMNS}"
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

    async def _take(self, claim: Claim, token: str) -> list[OutboxItem]:
        owner, now, until, limit, lanes = claim
        parameters = {"until": until, "owner": owner, "token": token, "now": now, "limit": limit}
        if lanes is None:
            rows = await self._rows(self._claim, parameters)
        else:
            named = [stored(lane) for lane in lanes]
            parameters.update(lanes=named, rooms=[max(0, room) for room in lanes.values()])
            rows = await self._rows(self._claim_lanes, parameters)
        return [_item(row) for row in rows]

    async def _taken_by(self, lost: Claim, token: str, claim: Claim) -> list[OutboxItem]:
        parameters = (claim.until, token, lost.owner, *held_by(lost, claim))
        return [_item(row) for row in await self._rows(self._hand_over, parameters)]

    async def renew(
        self, item_id: str, owner: str, until: float, *, receipt: dict[str, Any] | None = None
    ) -> bool:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))
        statement = (
            f"UPDATE {self._table} SET due = %s, receipt = coalesce(%s, receipt) "
            "WHERE item_id = %s AND owner = %s AND NOT done"
        )
        return await self._count(statement, (until, text, stored(item_id), owner)) > 0

    async def complete(self, item_id: str, receipt: dict[str, Any] | None) -> None:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))
        statement = (
            f"UPDATE {self._table} SET done = true, receipt = %s, owner = NULL WHERE item_id = %s"
        )
        await self._count(statement, (text, stored(item_id)))

    async def postpone(
        self, item_id: str, due: float, receipt: dict[str, Any] | None = None
    ) -> None:
        text = None if receipt is None else json.dumps(receipt, separators=(",", ":"))
        statement = (
            f"UPDATE {self._table} SET due = %s, attempts = attempts + 1, owner = NULL, "
            "receipt = coalesce(%s, receipt) WHERE item_id = %s AND NOT done"
        )
        await self._count(statement, (due, text, stored(item_id)))

    async def items_for(self, pending_id: str) -> list[OutboxItem]:
        statement = (
            f"SELECT {COLUMNS} FROM {self._table} WHERE pending_id = %s ORDER BY created, item_id"
        )
        return [_item(row) for row in await self._rows(statement, (pending_id,))]

    async def next_due(self, lanes: Collection[str] | None = None) -> float | None:
        if lanes is None:
            rows = await self._rows(f"SELECT MIN(due) FROM {self._table} WHERE NOT done")
        else:
            rows = await self._rows(self._first, ([stored(lane) for lane in lanes],))
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
            (stored(i.item_id), i.pending_id, i.due, _body_text(i), i.attempts, i.created),
        )
        new += cursor.rowcount
    return new


def _body_text(item: OutboxItem) -> str:
    """The item's body as the table holds it: JSON without a ``\\u0000`` in it."""
    text = item.encoded_body()
    if "\\u000" not in text:  # no text holds a NUL, nor starts as an escaped one
        return text
    return json.dumps(_texts(item.body, stored), separators=(",", ":"), sort_keys=True)


def _item(row: Sequence[Any]) -> OutboxItem:
    """The item a row of :data:`COLUMNS` holds, its id and its body as they were given."""
    item = item_from_row(row)
    escaped = "\\u0001" in row[3]
    if not escaped and not row[0].startswith("\x01"):
        return item
    body = _texts(item.body, _as_given) if escaped else item.body
    return dataclasses.replace(item, item_id=_as_given(row[0]), body=body)


def _texts(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (JSON-ready) with ``change`` applied to each text in it, keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(key): _texts(inner, change) for key, inner in value.items()}
    if isinstance(value, list):
        return [_texts(inner, change) for inner in value]
    return value


def _as_given(text: str) -> str:
    given = read_back(text)
    return given if isinstance(given, str) else text

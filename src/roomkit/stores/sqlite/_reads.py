"""The SQLite store's reads of its records: one, many, the pending ones and the settled ones.

Each read runs on the store's connection outside any write transaction (WAL lets it run
beside another process's write) and hides the outcomes past the retention on the store's
clock, which the purge has not dropped yet. A row that cannot be decoded is skipped and
logged by the listings, and raised by :meth:`Reads.fetch`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roomkit.models.pending_input import PendingInput
from roomkit.stores._checks import storable_id
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._link import fetch_all
from roomkit.stores.sqlite._trail import Session

__all__ = ["Reads", "Wanted"]

Wanted = tuple[str | None, ...] | None
"""The actors whose outcomes a listing wants; ``None``: everyone's."""


@dataclass(slots=True, eq=False)
class Reads:
    """The record reads of one store, on its connection."""

    session: Session
    """Opens the store's connection for a read."""
    cutoff: Callable[[], float]
    """The time at or before which a settled outcome has expired."""

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled within retention, or ``None``."""
        if not storable_id(pending_id):
            return None
        async with self.session() as db:
            rows = await fetch_all(db, sql.SELECT_BY_ID, (pending_id, self.cutoff()))
        return sql.decode_row(rows[0]) if rows else None

    async def fetch_many(self, pending_ids: Collection[str]) -> list[PendingInput]:
        """The records among ``pending_ids`` that exist, in no particular order."""
        rows: list[Sequence[Any]] = []
        async with self.session() as db:
            cutoff = self.cutoff()
            for statement, parameters in sql.select_many(list(dict.fromkeys(pending_ids))):
                rows.extend(await fetch_all(db, statement, (*parameters, cutoff)))
        return sql.decode_rows(rows)

    async def pending_records(self, filters: Mapping[str, str | None]) -> list[PendingInput]:
        """The pending requests whose fields match ``filters`` (``None`` matches any)."""
        statement, parameters = sql.select_pending(filters)
        async with self.session() as db:
            rows = await fetch_all(db, statement, parameters)
        return sql.decode_rows(rows)

    async def was_announced(self, pending_id: str) -> bool:
        """False while the stored request's announcement is owed, else True."""
        async with self.session() as db:
            rows = await fetch_all(db, sql.SELECT_UNANNOUNCED, (pending_id,))
        return not rows or rows[0][0] is None

    async def list_settled(self, wanted: Wanted, limit: int) -> list[PendingInput]:
        """The most recently settled requests within the retention, newest first, of the
        actors ``wanted`` (checked by :func:`~roomkit.stores.base.check_settled_listing`)."""
        async with self.session() as db:
            statement, parameters = sql.select_settled(wanted, self.cutoff(), limit)
            rows = await fetch_all(db, statement, parameters)
        return sql.decode_rows(rows)

"""The PostgreSQL store's reads of its records: one, many, the pending ones and the settled ones.

Each read is one statement on a connection of the store's pool, outside any transaction of
its own, and hides the outcomes past the retention on the store's clock, which the purge
has not dropped yet. An id holding a NUL (which no stored id holds) reads as absent. A row
that cannot be decoded is skipped and logged by the listings, and raised by
:meth:`Reads.fetch`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from roomkit.models.pending_input import PendingInput
from roomkit.stores._checks import storable_id
from roomkit.stores.postgres._schema import Statements, decode_row, decode_rows

__all__ = ["Reads", "Wanted"]

Wanted = tuple[str | None, ...] | None
"""The actors whose outcomes a listing wants; ``None``: everyone's."""

Rows = Callable[[str, Any], Awaitable[list[Any]]]
"""Runs one read on the store's pool and returns its rows."""


class Reads:
    """The record reads of one store, on its pool.

    Args:
        rows: runs one read and returns its rows.
        statements: the store's SQL.
        cutoff: the time at or before which a settled outcome has expired.
    """

    def __init__(self, rows: Rows, statements: Statements, cutoff: Callable[[], float]) -> None:
        self._rows = rows
        self._sql = statements
        self._cutoff = cutoff

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled within retention, or ``None``."""
        if not storable_id(pending_id) or "\x00" in pending_id:
            return None
        rows = await self._rows(self._sql.select_by_id, (pending_id, self._cutoff()))
        return decode_row(rows[0]) if rows else None

    async def fetch_many(self, pending_ids: Collection[str]) -> list[PendingInput]:
        """The records among ``pending_ids`` that exist, in no particular order."""
        wanted = [
            pending_id
            for pending_id in dict.fromkeys(pending_ids)
            if storable_id(pending_id) and "\x00" not in pending_id
        ]
        if not wanted:
            return []
        rows = await self._rows(self._sql.select_many, (wanted, self._cutoff()))
        return decode_rows(rows)

    async def pending_records(self, filters: Mapping[str, str | None]) -> list[PendingInput]:
        """The pending requests whose fields match ``filters`` (``None`` matches any)."""
        statement, parameters = self._sql.select_pending(filters)
        return decode_rows(await self._rows(statement, parameters))

    async def was_announced(self, pending_id: str) -> bool:
        """False while the stored request's announcement is owed, else True."""
        rows = await self._rows(self._sql.select_unannounced, (pending_id,))
        return not rows or rows[0][0] is None

    async def list_settled(self, wanted: Wanted, limit: int) -> list[PendingInput]:
        """The most recently settled requests within the retention, newest first, of the
        actors ``wanted`` (checked by :func:`~roomkit.stores.base.check_settled_listing`)."""
        statement, parameters = self._sql.select_settled(wanted, self._cutoff(), limit)
        return decode_rows(await self._rows(statement, parameters))

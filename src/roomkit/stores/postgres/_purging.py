"""What a PostgreSQL store drops once past its retention, on one connection: records, the
outbox's done deliveries, and the histories past the audit retention. A create purges on
its way now and then (every :data:`PURGE_EVERY` seconds of the store's clock); a purge
that fails is tried again an interval later and never fails the create, which says on its
own whether the server answers."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import AsyncConnection

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.postgres._history import purge_chains
from roomkit.stores.postgres._outbox import PostgresOutbox
from roomkit.stores.postgres._schema import Statements

__all__ = ["PURGE_EVERY", "Purging"]

PURGE_EVERY = 60.0
"""Seconds on the store's clock between the purges creates make on their way."""


class Purging:
    """The store's purges.

    Args:
        sql: the store's statements.
        outbox: the store's outbox, whose done deliveries go with the records.
        keep: seconds a settled record stays.
        audit_retention: seconds a settled request's history stays, ``None`` for good.
    """

    def __init__(
        self,
        sql: Statements,
        outbox: PostgresOutbox,
        keep: float,
        audit_retention: float | None,
    ) -> None:
        self._sql = sql
        self._outbox = outbox
        self._keep = keep
        self._audit_retention = audit_retention
        self._next = -math.inf

    async def on_the_way(
        self, now: float, purge: Callable[[], Awaitable[int]], logger: logging.Logger, where: str
    ) -> None:
        """Run ``purge`` (the store's whole purge) when one is due at ``now``; a failure is
        logged, naming ``where``."""
        if now < self._next:
            return
        self._next = now + PURGE_EVERY
        try:
            await purge()
        except StoreUnavailableError as error:
            logger.warning("could not purge the expired records at %s: %s", where, error)

    async def purge(self, db: AsyncConnection[Any], now: float) -> int:
        """Drop what is past its retention at ``now`` on ``db``; how many records."""
        cursor = await db.execute(self._sql.purge, (now - self._keep,))
        await self._outbox.purge(now - self._outbox.keep, db=db)
        if self._audit_retention is not None:
            await purge_chains(db, self._sql, now - self._audit_retention)
        self._next = now + PURGE_EVERY
        return max(cursor.rowcount, 0)

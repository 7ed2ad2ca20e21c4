"""The database server's clock, read in the store's process without a round trip.

By default the Postgres store keeps time by the server: a settle's deadline is judged in
its statement by ``statement_timestamp()``, so processes whose clocks disagree agree on
every deadline. A wait still needs a clock of its own, to set a deadline and to know when
to record the timeout: :class:`ServerClock` is the local clock plus the offset to the
server's, measured by one read of the server's time. The reading is taken as the read
returns, so that the estimate lags the server's time by at most the round trip and never
runs ahead of it: a timeout is recorded no earlier than the server allows.
"""

from __future__ import annotations

import time
from typing import Any

from psycopg import AsyncConnection

__all__ = ["ServerClock"]

_READ = "SELECT extract(epoch FROM clock_timestamp())::double precision"


class ServerClock:
    """Seconds since the epoch on the server's clock, estimated through the local one."""

    def __init__(self) -> None:
        self._offset = 0.0
        self.synced = False
        """Whether the offset was measured."""

    def __call__(self) -> float:
        return time.time() + self._offset

    async def sync(self, db: AsyncConnection[Any]) -> None:
        """Measure the offset to the server's clock on ``db``."""
        cursor = await db.execute(_READ)
        row = await cursor.fetchone()
        returned = time.time()
        if row is not None:
            self._offset = float(row[0]) - returned
            self.synced = True

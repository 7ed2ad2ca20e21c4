"""The change feed of the Postgres store: LISTEN on one connection while anyone listens.

Every create and settle sends ``NOTIFY`` in its own transaction, so a hint leaves only once
the change is committed, and the feed turns each ``created <id>`` / ``settled <id>`` into a
:class:`PendingChange`. A notification is only a hint: while the feed was away (a lost
connection, a server restarted) nothing is kept for it, so each time it starts listening it
sends :attr:`PendingChangeKind.RESYNC`, and waiters re-read on their own every
``backstop_interval`` too. A lost notification delays a wake-up and loses nothing.

Where LISTEN is refused (a pooler in transaction mode), the feed polls instead: every
``backstop_interval`` it reads the change counter and sends ``RESYNC`` when it moved, after
one warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import AsyncConnection

from roomkit.tools.human_input.stores._durable_base import ListenerFeed
from roomkit.tools.human_input.stores._postgres_schema import Statements
from roomkit.tools.human_input.stores.base import PendingChange, PendingChangeKind

__all__ = ["NotifyFeed", "hint"]

logger = logging.getLogger("roomkit.tools.human_input.stores.postgres")

_KINDS = {"created": PendingChangeKind.CREATED, "settled": PendingChangeKind.SETTLED}
_RESYNC = PendingChange(PendingChangeKind.RESYNC)
_LOST = (psycopg.OperationalError, psycopg.InterfaceError, OSError)
_MAX_PAYLOAD = 7900
"""Bytes a NOTIFY payload may hold, under the server's 8000."""


def hint(kind: PendingChangeKind, pending_id: str) -> str:
    """The NOTIFY payload of a change (``resync`` when the id is too long to send)."""
    payload = f"{kind.value} {pending_id}"
    return payload if len(payload.encode()) <= _MAX_PAYLOAD else "resync"


class NotifyFeed(ListenerFeed):
    """Listeners, and the task that feeds them from LISTEN (or, where refused, polling).

    Args:
        connect: opens a new autocommit connection to the store's server.
        sql: the statements of the store's schema (its channel, its change counter).
        where: how to name the server in log messages (no password).
        interval: seconds between polls, when polling; between liveness checks otherwise.
        backoff: the first reconnect delay in seconds, doubled per failure up to 2 s.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        sql: Statements,
        *,
        where: str,
        interval: float,
        backoff: float = 0.05,
    ) -> None:
        super().__init__(name=f"roomkit postgres feed {sql.channel}", logger=logger)
        self._connect = connect
        self._sql = sql
        self._where = where
        self._interval = interval
        self._keepalive = max(interval, 5.0)
        self._backoff = backoff
        self.polling = False
        """Whether the feed polls, since LISTEN was refused."""

    async def _run(self) -> None:
        delay = self._backoff
        while True:
            try:
                db: AsyncConnection[Any] = await self._connect()
            except _LOST as error:
                logger.warning(
                    "change feed from %s cannot connect (%s); retrying in %.2f s",
                    self._where,
                    str(error).strip().splitlines()[0] if str(error).strip() else error,
                    delay,
                )
            else:
                try:
                    delay = self._backoff
                    await self._listen(db)
                except _LOST as error:
                    logger.warning(
                        "change feed from %s lost (%s); reconnecting in %.2f s",
                        self._where,
                        str(error).strip().splitlines()[0] if str(error).strip() else error,
                        delay,
                    )
                except Exception:
                    logger.exception(
                        "change feed from %s failed; retrying in %.2f s", self._where, delay
                    )
                finally:
                    await _close_quietly(db)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _listen(self, db: AsyncConnection[Any]) -> None:
        if not self.polling:
            try:
                await db.execute(f'LISTEN "{self._sql.channel}"')
            except psycopg.errors.FeatureNotSupported as error:
                self.polling = True
                logger.warning(
                    "the server at %s refuses LISTEN (%s), as a pooler in transaction mode "
                    "does: changes made elsewhere arrive by polling every %.2f s",
                    self._where,
                    error,
                    self._interval,
                )
        self.emit(_RESYNC)
        if self.polling:
            await self._poll(db)
            return
        while True:
            heard = False
            async for notice in db.notifies(timeout=self._keepalive):
                heard = True
                self._dispatch(notice.payload)
            if not heard:
                # Silence: make sure the connection is still there.
                await db.execute("SELECT 1")

    async def _poll(self, db: AsyncConnection[Any]) -> None:
        last: int | None = None
        while True:
            cursor = await db.execute(self._sql.last_seq)
            row = await cursor.fetchone()
            seq = int(row[0]) if row is not None else 0
            if last is not None and seq != last:
                self.emit(_RESYNC)
            last = seq
            await asyncio.sleep(self._interval)

    def _dispatch(self, payload: str) -> None:
        verb, _, pending_id = payload.partition(" ")
        if verb == "resync":
            self.emit(_RESYNC)
            return
        kind = _KINDS.get(verb)
        if kind is None or not pending_id:
            logger.debug("ignoring an unknown change notification %r", payload)
            return
        self.emit(PendingChange(kind, pending_id))


async def _close_quietly(db: AsyncConnection[Any]) -> None:
    # The connection is being given up: a failure to close it cleanly changes nothing.
    with contextlib.suppress(*_LOST):
        await db.close()

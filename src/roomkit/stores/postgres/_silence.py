"""The bound on a block of calls on one pooled connection of a Postgres store.

A server that stops answering on an open connection (frozen, or cut off with no reset, which
no connect timeout sees) would hold a call for ever. :class:`Silence` ends the call once its
bound is up by shutting the connection's socket down, so that it fails at once; cancelling
the call would have psycopg ask the server to cancel it first and wait for an answer that
does not come, 10 s more. :func:`silenced` puts the bound on a block (a call of the store,
or one page of a long read on a connection held longer) and names a bound reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import PoolTimeout

__all__ = ["HANG_UP_GRACE", "LOST", "Silence", "drop", "hang_up", "silenced"]

HANG_UP_GRACE = 1.0
"""Seconds a block of calls past its bound (its connection shut down) may still take
before it is cancelled."""
LOST = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, OSError)
"""What a call raises when the server or the network failed it."""


class Silence:
    """The bound on one block of calls on a connection of the pool.

    Once the bound is up, the connection's socket is shut down: a call waiting on the server
    reads the end of the stream and fails at once. Cancelling the call instead has psycopg
    send the server a cancel request and wait for it to be heard, up to 10 s more on a
    server that hears nothing. A block still running :data:`HANG_UP_GRACE` seconds later
    (waiting on something else than the server) is cancelled.
    """

    def __init__(self, db: AsyncConnection[Any], limit: float) -> None:
        self._db = db
        self._limit = limit
        self._timer: asyncio.TimerHandle | None = None
        self._cut: asyncio.Timeout | None = None
        self.struck = False
        """Whether the bound was reached."""

    def start(self, cut: asyncio.Timeout) -> None:
        """Start counting; ``cut`` (an ``asyncio.timeout(None)`` around the block) is what
        cancels a block that outlives its hang-up."""
        self._cut = cut
        self._timer = asyncio.get_running_loop().call_later(self._limit, self._strike)

    def stop(self) -> None:
        """The block ended: stop counting."""
        if self._timer is not None:
            self._timer.cancel()

    def _strike(self) -> None:
        self.struck = True
        hang_up(self._db)
        if self._cut is not None:
            self._cut.reschedule(asyncio.get_running_loop().time() + HANG_UP_GRACE)


def hang_up(db: AsyncConnection[Any]) -> None:
    """Shut down ``db``'s socket, which stays open (its number is not handed out again
    while a wait may still watch it): whatever waits on it reads the end of the stream."""
    with contextlib.suppress(Exception), socket.socket(fileno=os.dup(db.pgconn.socket)) as sock:
        sock.shutdown(socket.SHUT_RDWR)


def drop(db: AsyncConnection[Any]) -> None:
    """Close ``db`` without a word to its server (which is not answering): the pool then
    discards it rather than hand it out again."""
    with contextlib.suppress(Exception):
        db.pgconn.finish()


@asynccontextmanager
async def silenced(db: AsyncConnection[Any], limit: float) -> AsyncIterator[None]:
    """A block of calls on ``db`` bound to ``limit`` seconds (:class:`Silence`).

    Raises:
        TimeoutError: the server did not answer within ``limit`` seconds on the open
            connection (frozen, or cut off with no reset): the connection is dropped before
            its ROLLBACK, which would wait as long, and the call left in doubt.
    """
    silence = Silence(db, limit)
    try:
        async with asyncio.timeout(None) as cut:
            silence.start(cut)
            try:
                yield
            finally:
                silence.stop()
    except LOST as error:
        if not silence.struck:
            raise
        drop(db)
        raise TimeoutError(f"no answer within {limit:g} s on an open connection") from error

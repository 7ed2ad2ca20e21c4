"""One LISTEN connection per process and server, shared by every Postgres store's feed.

``NOTIFY`` takes a lock at commit that every sender waits on, and each idle listening
connection makes it slower: the feeds of a process therefore share one connection per
server (per event loop), which LISTENs on each store's channel while that store's feed runs.
Notifications are only hints, so nothing is kept for a channel while its connection is down:
each time the connection LISTENs again (the first time, after a reconnect, when a channel
joins), its feeds are told to resync.

The hub's task waits for the connection's socket to become readable, or for a channel to
join or leave, whichever comes first; it reads notifications only once the socket is
readable, so a join never interrupts a read. A join is therefore live (LISTENed, its feed
told to resync) as soon as the task runs, without waiting for a quiet spell to end.

Where LISTEN is refused, or accepted but never delivers (PgBouncer in transaction mode
hands the listening server connection to other clients between transactions, and drops
what it hears meanwhile), the feeds poll instead. Each new connection therefore checks
that a notification sent from another connection reaches it before the hub relies on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, NoReturn

import psycopg
from psycopg import AsyncConnection

__all__ = ["LISTENER", "Hub", "Refused"]

logger = logging.getLogger("roomkit.tools.human_input.stores.postgres")

_LOST = (psycopg.OperationalError, psycopg.InterfaceError, OSError)
LISTENER = "roomkit listener"
"""The application name of the listening connection, unless the DSN names one."""
_KEEPALIVE = 10.0
"""Seconds without a read or a statement after which the hub checks that its connection is
alive."""
_BACKOFF, _BACKOFF_CAP = 0.05, 2.0
_PROBE_TIMEOUT = 2.0
"""Seconds a new listening connection waits for its test notification before it concludes
that notifications do not reach it."""

Deliver = Callable[[str | None], None]
"""Called with a notification's payload, or ``None`` when changes may have been missed."""


class Refused(Exception):
    """The server refuses LISTEN: the feed polls."""


class Hub:
    """The shared LISTEN connection of one server in one event loop.

    Use :meth:`shared` to find it; :meth:`join` a channel with a callback.
    """

    _hubs: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Hub]]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, dsn: str, kwargs: dict[str, Any], where: str) -> None:
        self._dsn = dsn
        self._kwargs = kwargs
        self._where = where
        self._channels: dict[str, list[Deliver]] = {}
        self._listening: set[str] = set()
        # Callbacks that joined since the last LISTEN round: told to resync once it is live.
        self._fresh: list[tuple[str, Deliver]] = []
        self._task: asyncio.Task[None] | None = None
        # Resolved to wake the task's wait: by the socket turning readable, or a join or leave.
        self._bell: asyncio.Future[None] | None = None
        self.refused: BaseException | None = None
        """Why the server refused LISTEN, once it did."""

    @classmethod
    def shared(cls, dsn: str, kwargs: dict[str, Any], where: str) -> Hub:
        """The hub of ``dsn`` in the running loop, made on first use."""
        hubs = cls._hubs.setdefault(asyncio.get_running_loop(), {})
        hub = hubs.get(dsn)
        if hub is None:
            hub = hubs[dsn] = cls(dsn, kwargs, where)
        return hub

    @property
    def connections(self) -> int:
        """How many listening connections the hub holds: 0 or 1."""
        return 0 if self._task is None or self._task.done() else 1

    def join(self, channel: str, deliver: Deliver) -> None:
        """Deliver ``channel``'s notifications to ``deliver`` from now on.

        Raises:
            Refused: the server refused LISTEN before.
        """
        if self.refused is not None:
            raise Refused(str(self.refused))
        self._channels.setdefault(channel, []).append(deliver)
        self._fresh.append((channel, deliver))
        self._ring()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"roomkit postgres listener {self._where}"
            )

    async def leave(self, channel: str, deliver: Deliver) -> None:
        """Stop delivering to ``deliver``; the last to leave closes the connection."""
        callbacks = self._channels.get(channel, [])
        with contextlib.suppress(ValueError):
            callbacks.remove(deliver)
        if not callbacks:
            self._channels.pop(channel, None)
        if self._channels:
            self._ring()
            return
        task, self._task = self._task, None
        hubs = self._hubs.get(asyncio.get_running_loop(), {})
        if hubs.get(self._dsn) is self:
            del hubs[self._dsn]
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _tell(self, channel: str, payload: str | None) -> None:
        for deliver in tuple(self._channels.get(channel, ())):
            deliver(payload)

    async def _run(self) -> None:
        delay = _BACKOFF
        while self._channels:
            try:
                db = await AsyncConnection.connect(
                    self._dsn, **{"fallback_application_name": LISTENER, **self._kwargs}
                )
            except _LOST as error:
                logger.warning(
                    "change feed from %s cannot connect (%s); retrying in %.2f s",
                    self._where,
                    _line(error),
                    delay,
                )
            else:
                try:
                    await self._serve(db)
                    delay = _BACKOFF
                except _LOST as error:
                    logger.warning(
                        "change feed from %s lost (%s); reconnecting in %.2f s",
                        self._where,
                        _line(error),
                        delay,
                    )
                except Refused:
                    return
                finally:
                    self._listening.clear()
                    # Whatever was sent while the connection was down is lost: resync all.
                    self._fresh = [
                        (channel, deliver)
                        for channel, callbacks in self._channels.items()
                        for deliver in callbacks
                    ]
                    with contextlib.suppress(*_LOST):
                        await db.close()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _BACKOFF_CAP)

    async def _serve(self, db: AsyncConnection[Any]) -> None:
        await self._probe(db)
        loop = asyncio.get_running_loop()
        quiet_until = loop.time() + _KEEPALIVE
        while self._channels:
            if await self._update(db):
                quiet_until = loop.time() + _KEEPALIVE
            # What arrived during the statements waits in psycopg's backlog, and what is on
            # the socket is read now: the wait below only sees what is still to come.
            await self._drain(db)
            if await self._idle(db, quiet_until - loop.time()):
                quiet_until = loop.time() + _KEEPALIVE
            elif loop.time() >= quiet_until:
                await db.execute("SELECT 1")
                quiet_until = loop.time() + _KEEPALIVE

    async def _drain(self, db: AsyncConnection[Any]) -> None:
        """Deliver the notifications received so far, without waiting for more."""
        async for notice in db.notifies(timeout=0):
            self._tell(notice.channel, notice.payload)

    async def _idle(self, db: AsyncConnection[Any], timeout: float) -> bool:
        """Wait until ``db``'s socket is readable, a channel joins or leaves, or ``timeout``.

        Only the socket's readiness is watched, nothing is read: the caller reads once this
        returns, so a wake-up never interrupts a read in progress.

        Returns:
            Whether the socket is readable.
        """
        if self._stale() or timeout <= 0:
            return False
        loop = asyncio.get_running_loop()
        readable = False

        def ready() -> None:
            nonlocal readable
            readable = True
            self._ring()

        self._bell = bell = loop.create_future()
        fileno = db.fileno()
        loop.add_reader(fileno, ready)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await bell
        finally:
            loop.remove_reader(fileno)
            self._bell = None
        return readable

    def _ring(self) -> None:
        """Wake the task's wait, if it waits."""
        if self._bell is not None and not self._bell.done():
            self._bell.set_result(None)

    def _stale(self) -> bool:
        """Whether channels joined or left since the last LISTEN round."""
        return bool(self._fresh) or self._listening != set(self._channels)

    async def _probe(self, db: AsyncConnection[Any]) -> None:
        """Check that a notification sent from another connection reaches ``db``.

        Raises:
            Refused: it did not arrive in time (the hub and its feeds poll from now on).
        """
        channel = f"roomkit_probe_{os.urandom(6).hex()}"
        await db.execute(f'LISTEN "{channel}"')
        async with await AsyncConnection.connect(
            self._dsn, **{"fallback_application_name": f"{LISTENER} probe", **self._kwargs}
        ) as other:
            await other.execute("SELECT pg_notify(%s, 'probe')", (channel,))
        heard = False
        async for notice in db.notifies(timeout=_PROBE_TIMEOUT):
            if notice.channel == channel:
                heard = True
                break
            self._tell(notice.channel, notice.payload)
        await db.execute(f'UNLISTEN "{channel}"')
        if not heard:
            self._refuse(
                Refused(
                    f"a notification sent from another connection did not arrive within "
                    f"{_PROBE_TIMEOUT:g} s"
                )
            )

    def _refuse(self, error: BaseException) -> NoReturn:
        """Give LISTEN up for good: tell every feed, which then polls."""
        self.refused = error
        for name in list(self._channels):
            self._tell(name, None)
        raise Refused(str(error)) from error

    async def _update(self, db: AsyncConnection[Any]) -> bool:
        """LISTEN to the channels that joined, UNLISTEN those left; resync the new ones.

        Returns:
            Whether a statement ran.
        """
        wanted = set(self._channels)
        gone, new = sorted(self._listening - wanted), sorted(wanted - self._listening)
        for channel in gone:
            await db.execute(f'UNLISTEN "{channel}"')
            self._listening.discard(channel)
        for channel in new:
            try:
                await db.execute(f'LISTEN "{channel}"')
            except psycopg.errors.FeatureNotSupported as error:
                self._refuse(error)
            self._listening.add(channel)
        fresh, self._fresh = self._fresh, []
        for channel, deliver in fresh:
            if deliver not in self._channels.get(channel, ()):
                continue
            if channel in self._listening:
                deliver(None)
            else:
                # Joined while the statements ran: told once its LISTEN has run, next round.
                self._fresh.append((channel, deliver))
        return bool(gone or new)


def _line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__

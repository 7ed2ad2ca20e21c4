"""The change feed of the Redis store: one pub/sub connection while anyone listens.

The feed subscribes to the store's events channel and turns each ``created <id>``,
``voted <id>`` or ``settled <id>`` message into a :class:`PendingChange` for every listener.
Pub/sub keeps nothing for a subscriber that is away, so every time the subscription goes
live (the first time and after each reconnect) the feed sends
:attr:`PendingChangeKind.RESYNC`: listeners re-read what they watch and lose nothing that
moved while the feed was deaf.

The connection is the feed's own, with the client's automatic retries switched off: a
retry would reconnect and resubscribe silently, and the gap would go unreported. The feed
reconnects itself, with a capped exponential backoff, and pings an idle connection so that
a half-open socket is noticed too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from roomkit.core.exceptions import CorruptRecordError
from roomkit.stores._listener_feed import HINTED, ListenerFeed
from roomkit.stores._records import decode
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.stores.redis._scripts import unpack

__all__ = ["ChangeFeed"]

logger = logging.getLogger("roomkit.tools.human_input.stores.redis")

_RESYNC = PendingChange(PendingChangeKind.RESYNC)
_LOST = (RedisConnectionError, RedisTimeoutError, OSError)
_STOP_PATIENCE = 1.0
"""Seconds :meth:`ChangeFeed.stop` waits for a cancelled read before cutting its socket."""


class ChangeFeed(ListenerFeed):
    """Listeners, and the task that feeds them from a pub/sub channel.

    Args:
        pool: the store's connection pool; the feed copies its settings for its own pool.
        channel: the channel to subscribe to.
        where: how to name the server in log messages (no password).
        keepalive: seconds of silence after which the feed pings the server; a ping
            unanswered for as long again counts as a lost connection.
        backoff: the first reconnect delay in seconds, doubled per failure up to
            ``backoff_cap``.
        backoff_cap: the longest reconnect delay in seconds.
    """

    def __init__(
        self,
        pool: ConnectionPool,
        channel: str,
        *,
        where: str,
        keepalive: float = 15.0,
        backoff: float = 0.05,
        backoff_cap: float = 2.0,
    ) -> None:
        super().__init__(name=f"roomkit redis feed {channel}", where=where, logger=logger)
        self._source = pool
        self._channel = channel
        self._keepalive = keepalive
        self._backoff = backoff
        self._backoff_cap = backoff_cap
        self._pool: ConnectionPool | None = None

    async def stop(self) -> None:
        """Stop the feed task and close its connections; listeners stay registered."""
        self._retire()
        stuck = await self._ended(_STOP_PATIENCE)
        if stuck and self._pool is not None:
            # A read that let its cancellation pass fails once its socket is gone.
            await self._pool.disconnect()
            await asyncio.wait(stuck)
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.disconnect()

    def _client(self) -> Redis:
        if self._pool is None:
            kwargs = dict(self._source.connection_kwargs)
            kwargs["retry"] = Retry(NoBackoff(), 0)
            self._pool = ConnectionPool(connection_class=self._source.connection_class, **kwargs)
        return Redis(connection_pool=self._pool)

    def _current(self, task: asyncio.Task[None]) -> bool:
        """Whether ``task`` is still the feed; raises if it was cancelled.

        The client can let a cancellation pass while it connects, and return normally:
        the feed checks after every wait that it is still wanted.
        """
        if task.cancelling():
            raise asyncio.CancelledError
        return task is self._task

    async def _run(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        delay = self._backoff
        while self._current(task):
            pubsub: Any = self._client().pubsub()
            try:
                await pubsub.subscribe(self._channel)
                if not self._current(task):
                    return
                delay = self._backoff
                self.emit(_RESYNC)
                await self._read(pubsub, task)
            except _LOST as error:
                if not self._current(task):
                    return
                logger.warning(
                    "change feed from %s lost (%s); reconnecting in %.2f s",
                    self._where,
                    error or type(error).__name__,
                    delay,
                )
            except Exception:
                # A refusal (an ACL, a server that is not Redis) may pass: keep trying.
                logger.exception(
                    "change feed from %s failed; retrying in %.2f s", self._where, delay
                )
            finally:
                await pubsub.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._backoff_cap)

    async def _read(self, pubsub: Any, task: asyncio.Task[None]) -> None:
        pinged = False
        while True:
            message = await pubsub.get_message(
                ignore_subscribe_messages=True, timeout=self._keepalive
            )
            if not self._current(task):
                return
            if message is None:
                if pinged:
                    raise RedisTimeoutError(f"no answer to a ping in {self._keepalive:g} s")
                await pubsub.ping()
                pinged = True
                continue
            pinged = False
            if message.get("type") == "message":
                self._dispatch(message.get("data"))

    def _dispatch(self, data: object) -> None:
        text = data.decode() if isinstance(data, bytes) else str(data)
        verb, _, rest = text.partition(" ")
        pending_id, _, body = rest.partition(" ")
        kind = HINTED.get(verb)
        if kind is None or not pending_id:
            logger.debug("ignoring an unknown change message %r", text)
            return
        record = None
        if body and kind is PendingChangeKind.SETTLED:
            try:
                record = decode(unpack(body), hashed=True)
            except CorruptRecordError:
                # Only a hint: the waiter reads the record itself.
                logger.debug("unreadable record in the change message for %s", pending_id)
            if record is not None and record.pending_id != pending_id:
                record = None
        self.emit(PendingChange(kind, pending_id, record))

"""The pools a Redis store makes for itself: shut while the store is closed, and a queue for
a connection that the store's ``timeout`` does not count.

redis-py's pools have no closed state: closing one disconnects the connections of the
moment, and the next use connects again. A call in flight while its store closes goes on: the
client tries it again on a new connection (the close cut the one it waited on), or takes one
from the pool it just closed, and gives it back when the call ends. Nothing would close that
connection again. A store's own pool is of a kind below, and :func:`shut` marks it closed:
from then on, every connection given back to it is disconnected, until the store opens again.

A call's ``timeout`` says how long the server may take to answer it, so a call that queues
for a connection of a busy pool (a burst of more calls than connections, on a server that
answers) has its bound paused while it queues (:class:`Bound`, which
:func:`~roomkit.stores.redis._link.guard` makes). A slow queue is no outage: the queue has a
bound of its own (:data:`QUEUE_TIMEOUT`), and past it :class:`PoolExhaustedError` says the
pool was too small for the calls. Once a call finds the server not answering (its bound cut
it, or the server could not be reached), the pool counts as faulted: the calls queued then,
and those that queue until a call gets through again, wait within their bound, so that a
frozen server still fails them in about their ``timeout``.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any

from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.sentinel import SentinelConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError

__all__ = [
    "QUEUE_TIMEOUT",
    "Bound",
    "PoolExhaustedError",
    "StoreBlockingPool",
    "StorePool",
    "StoreSentinelPool",
    "shut",
]

QUEUE_TIMEOUT = 60.0
"""Seconds a call may queue for a connection of a store's own pool, outside its ``timeout``."""

_BOUND: ContextVar[Bound | None] = ContextVar("roomkit_redis_bound", default=None)
_QUEUED: ContextVar[_Queued | None] = ContextVar("roomkit_redis_queued", default=None)


class PoolExhaustedError(RedisConnectionError):
    """Every connection of the pool stayed busy while a call queued for one."""

    def __init__(self, pool: BlockingConnectionPool) -> None:
        super().__init__(
            f"no connection was free for {pool.timeout:g} s: all {pool.max_connections} "
            f"connections of the store's pool stayed busy with other calls (a queue, not a "
            f"server that is down); raise max_connections in the URL "
            f"(?max_connections={2 * pool.max_connections}) or make fewer calls at once"
        )


class Bound:
    """The ``timeout`` of one call of a store, as the store's pool sees it: paused while the
    call queues for a connection (see the module docstring).

    Args:
        cut: the ``asyncio.timeout`` around the call, entered before the call uses the pool.
    """

    def __init__(self, cut: asyncio.Timeout) -> None:
        self._cut = cut
        self._task = asyncio.current_task()
        self._left: float | None = None
        self.pool: StoreBlockingPool | None = None
        """The store's own pool the call took a connection of, if it did."""

    def __enter__(self) -> Bound:
        self._token = _BOUND.set(self)
        return self

    def __exit__(self, *_: object) -> None:
        _BOUND.reset(self._token)
        self.resume()

    @staticmethod
    def current() -> Bound | None:
        """The bound of the running task's call (not of a task it started), if any."""
        bound = _BOUND.get()
        return bound if bound is not None and bound._task is asyncio.current_task() else None

    def pause(self) -> None:
        """Stop counting, keeping the seconds left (none to keep once the bound is up)."""
        when = self._cut.when()
        if when is None or self._left is not None or self._cut.expired():
            return
        self._left = when - asyncio.get_running_loop().time()
        self._cut.reschedule(None)

    def resume(self) -> None:
        """Count again from the seconds left when paused; nothing when not paused."""
        left, self._left = self._left, None
        if left is not None and not self._cut.expired():
            self._cut.reschedule(asyncio.get_running_loop().time() + left)

    def answered(self, answered: bool) -> None:
        """The call ended: with an answer of the server, or with none (which faults the
        pool and has the calls queued on it wait within their bounds)."""
        if self.pool is not None:
            self.pool.faulted = not answered
            if not answered:
                self.pool.wake_queued()


class StorePool(ConnectionPool):
    """A store's own pool (a plain one, as its caller's client had)."""

    closed = False
    """Whether the store is closed: a connection given back is then disconnected."""

    async def release(self, connection: AbstractConnection) -> None:
        """Take ``connection`` back; disconnect it while the store is closed."""
        try:
            await super().release(connection)
        finally:
            if self.closed:
                # Its socket is closed before this awaits anything, even if cancelled.
                await connection.disconnect()


class StoreBlockingPool(StorePool, BlockingConnectionPool):
    """A store's own blocking pool (made from a URL, or as its caller's client had), on
    which a queued call's ``timeout`` waits (see the module docstring)."""

    faulted = False
    """Whether the last call that ended found the server not answering."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queued: set[Bound] = set()

    async def get_connection(self, *args: Any, **options: Any) -> AbstractConnection:
        """A connection, once one is free; a queued call's bound paused meanwhile.

        Raises:
            PoolExhaustedError: no connection was free within the pool's ``timeout``.
            redis.exceptions.ConnectionError: the connection could not be made.
        """
        bound = Bound.current()
        if bound is not None:
            bound.pool = self
            if not self.faulted and not super().can_get_connection():
                bound.pause()
                self._queued.add(bound)
        queued = _Queued(bound)
        token = _QUEUED.set(queued)
        try:
            # redis-py leaves get_connection unannotated.
            connection: AbstractConnection = await super().get_connection(  # type: ignore[no-untyped-call]
                *args, **options
            )
        except RedisConnectionError as error:
            if queued.waiting:
                raise PoolExhaustedError(self) from error
            raise
        finally:
            _QUEUED.reset(token)
            queued.served(self)
        return connection

    def can_get_connection(self) -> bool:
        """Whether a connection is free; for the call that asks, the end of its queue."""
        free = bool(super().can_get_connection())
        queued = _QUEUED.get()
        if free and queued is not None:
            queued.served(self)
        return free

    def wake_queued(self) -> None:
        """The server did not answer: the calls queued wait within their bounds again."""
        queued, self._queued = self._queued, set()
        for bound in queued:
            bound.resume()


class _Queued:
    """One call's wait for a connection: over once a connection is free for it."""

    def __init__(self, bound: Bound | None) -> None:
        self.bound = bound
        self.waiting = True

    def served(self, pool: StoreBlockingPool) -> None:
        self.waiting = False
        if self.bound is not None:
            pool._queued.discard(self.bound)
            self.bound.resume()


class StoreSentinelPool(StorePool, SentinelConnectionPool):
    """A store's own pool of a Sentinel's master, as its caller's client had."""


def shut(client: Redis, closed: bool) -> None:
    """Mark the pool of ``client`` closed (or open again), when it is a store's own."""
    pool = client.connection_pool
    if isinstance(pool, StorePool):
        pool.closed = closed

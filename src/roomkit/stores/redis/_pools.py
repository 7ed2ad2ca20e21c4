"""The pools a Redis store makes for itself: shut while the store is closed, and a queue for
a connection that the store's ``timeout`` does not count.

redis-py's pools have no closed state: closing one disconnects the connections of the
moment, and the next use connects again. A call in flight while its store closes goes on: the
client tries it again on a new connection (the close cut the one it waited on), or takes one
from the pool it just closed, and gives it back when the call ends. Nothing would close that
connection again. A store's own pool is of a kind below, and :func:`shut` marks it closed:
from then on, every connection given back to it is disconnected, until the store opens again.
An opening that fails disconnects what it left idle in the store's own pool (:func:`opening`):
the caller of ``async with store:`` gets no store to close.

A call that queues for a connection of a busy pool (a burst of more calls than connections,
on a server that answers) has its bound paused while it queues (:mod:`._bounds`). A slow
queue is no outage: the queue has a bound of its own (:data:`QUEUE_TIMEOUT`), and past it
:class:`PoolExhaustedError` says the pool was too small for the calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.sentinel import SentinelConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError

from roomkit.stores.redis._bounds import Counted, Turns

__all__ = [
    "QUEUE_TIMEOUT",
    "PoolExhaustedError",
    "StoreBlockingPool",
    "StorePool",
    "StoreSentinelPool",
    "opening",
    "shut",
]

QUEUE_TIMEOUT = 60.0
"""Seconds a call may queue for a connection of a store's own pool, outside its ``timeout``."""

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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turns = Turns()
        """The calls queued for a connection."""

    async def get_connection(self, *args: Any, **options: Any) -> AbstractConnection:
        """A connection, once one is free; a queued call's bound paused meanwhile.

        Raises:
            PoolExhaustedError: no connection was free within the pool's ``timeout``.
            redis.exceptions.ConnectionError: the connection could not be made.
        """
        bound = Counted.current()
        if bound is not None:
            if super().can_get_connection():
                bound.went_through(self.turns)
            else:
                self.turns.wait(bound)
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


class _Queued:
    """One call's wait for a connection: over once a connection is free for it."""

    def __init__(self, bound: Counted | None) -> None:
        self.bound = bound
        self.waiting = True

    def served(self, pool: StoreBlockingPool) -> None:
        self.waiting = False
        if self.bound is not None:
            pool.turns.served(self.bound)


class StoreSentinelPool(StorePool, SentinelConnectionPool):
    """A store's own pool of a Sentinel's master, as its caller's client had."""


def shut(client: Redis, closed: bool) -> None:
    """Mark the pool of ``client`` closed (or open again), when it is a store's own."""
    pool = client.connection_pool
    if isinstance(pool, StorePool):
        pool.closed = closed


@asynccontextmanager
async def opening(client: Redis, *, owned: bool) -> AsyncIterator[None]:
    """Around a store's opening: when it fails (or is cancelled), the idle connections of
    ``client``'s pool are disconnected if the pool is the store's own (``owned``).

    The calls in flight on it (those of a room store opened beside the store, on its
    client) keep their connections.
    """
    try:
        yield
    except BaseException:
        if owned:
            await client.connection_pool.disconnect(inuse_connections=False)
        raise

"""The pools a Redis store makes for itself, which stay shut while the store is closed.

redis-py's pools have no closed state: closing one disconnects the connections of the
moment, and the next use connects again. A call in flight while its store closes goes on: the
client tries it again on a new connection (the close cut the one it waited on), or takes one
from the pool it just closed, and gives it back when the call ends. Nothing would close that
connection again. A store's own pool is of a kind below, and :func:`shut` marks it closed:
from then on, every connection given back to it is disconnected, until the store opens again.
"""

from __future__ import annotations

from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.sentinel import SentinelConnectionPool

__all__ = ["StoreBlockingPool", "StorePool", "StoreSentinelPool", "shut"]


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
    """A store's own blocking pool (made from a URL, or as its caller's client had)."""


class StoreSentinelPool(StorePool, SentinelConnectionPool):
    """A store's own pool of a Sentinel's master, as its caller's client had."""


def shut(client: Redis, closed: bool) -> None:
    """Mark the pool of ``client`` closed (or open again), when it is a store's own."""
    pool = client.connection_pool
    if isinstance(pool, StorePool):
        pool.closed = closed

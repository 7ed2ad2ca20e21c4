"""The Redis stores' client: built from a URL, named without its password, its faults mapped.

Shared by the pending-request store and the room store (so it lives in ``core``, under both).
:func:`connect` checks the client a store is given, or builds the one it owns: a blocking
pool with short timeouts and a few retries.
:func:`describe` names the server for messages, without the password. :func:`guard` turns
the client's failures into the store's errors, and keeps a cancellation that the client
swallowed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

try:
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, ResponseError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "The Redis stores (RedisStore, RedisRoomStore) need redis-py: "
        "pip install 'roomkit-hitl[redis]'"
    ) from error

from roomkit.core.exceptions import CorruptRecordError, StoreError, StoreUnavailableError

__all__ = ["connect", "describe", "glob_escape", "guard", "text"]

_UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)


def connect(url: object, client: object, *, default: str, store: str = "RedisStore") -> Redis:
    """``client`` when given, else a new client for ``url`` (``default`` when ``None``).

    A new client sends nothing until it is used. Its pool blocks callers beyond its size
    until a connection frees up, rather than failing them. ``store`` names the class in
    messages.

    Raises:
        TypeError: both ``url`` and ``client`` are given, ``client`` is not a
            ``redis.asyncio.Redis`` or ``url`` is not a ``str``.
        ValueError: ``url`` is not a Redis URL.
    """
    if client is not None:
        if url is not None:
            raise TypeError(f"pass either url or client to {store}, not both")
        if not isinstance(client, Redis):
            raise TypeError(f"client must be a redis.asyncio.Redis, got {type(client).__name__}")
        return client
    url = default if url is None else url
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    try:
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=64,
            timeout=10,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 3),
            socket_connect_timeout=5,
            socket_timeout=5,
        )
    except ValueError as error:
        raise ValueError(f"url is not a Redis URL ({error})") from None
    return Redis(connection_pool=pool)


def describe(client: Redis) -> str:
    """The client's server as a URL, without the password."""
    kwargs = client.connection_pool.connection_kwargs
    db = kwargs.get("db", 0)
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={db}"
    scheme = (
        "rediss" if "ssl" in client.connection_pool.connection_class.__name__.lower() else "redis"
    )
    user = kwargs.get("username")
    host = f"{user}@" if user else ""
    return f"{scheme}://{host}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{db}"


@contextmanager
def guard(
    where: str, pending_id: str | None = None, *, store: str = "Redis store"
) -> Iterator[None]:
    """Turn the client's failures into the store's errors, and keep cancellations.

    The client can finish a call whose task was cancelled meanwhile and return as if
    nothing happened; the cancellation still ends the caller here.

    Args:
        where: the server, as :func:`describe` names it.
        pending_id: the record the call reads or writes, if one: a key of another type
            there is a corrupt record, not a failure of the server.
        store: what the messages call the store.
    """
    task = asyncio.current_task()
    cancels = task.cancelling() if task is not None else 0
    try:
        yield
    except _UNREACHABLE as error:
        raise StoreUnavailableError(f"the {store} at {where} cannot be reached: {error}") from error
    except ResponseError as error:
        if pending_id is not None and str(error).startswith("WRONGTYPE"):
            raise CorruptRecordError(
                f"pending record {pending_id!r} is not a hash at {where}"
            ) from None
        raise StoreError(f"the {store} at {where} failed: {error}") from error
    except RedisError as error:
        raise StoreError(f"the {store} at {where} failed: {error}") from error
    if task is not None and task.cancelling() > cancels:
        raise asyncio.CancelledError


def text(value: object) -> str:
    """A reply as text, whether the client decodes replies or not."""
    return value.decode() if isinstance(value, bytes) else str(value)


def glob_escape(pattern: str) -> str:
    """``pattern`` with the characters ``SCAN MATCH`` treats as wildcards escaped."""
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in pattern)

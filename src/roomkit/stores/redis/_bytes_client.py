"""The Redis stores' own client beside a caller's client that decodes replies.

The stores read what the server holds as bytes, so that an entry, a field or a key that is
not UTF-8 (no store writes one) is named for what it is, not a ``UnicodeDecodeError`` inside
redis-py that fails every read it is part of. Many applications make their one client with
``decode_responses=True``; given one, a store makes a client of its own to the same server:
a pool of the same kind (a Sentinel's asks the same Sentinels for the master), size and
connection class, with the same connection settings (host, port, database, credentials,
TLS, timeouts, retries) but for ``decode_responses``. The store closes that pool when it
closes; the caller's client is the caller's.

A pool whose kind this module does not know (a subclass of redis-py's pools) cannot be
rebuilt faithfully, and is refused with what to pass instead.
"""

from __future__ import annotations

import inspect
from typing import Any

from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.sentinel import SentinelConnectionPool

from roomkit.stores.redis._pools import StoreBlockingPool, StorePool, StoreSentinelPool

__all__ = ["bytes_client", "decodes"]

_PLUMBING = (
    # A Sentinel pool hands its connections the pool itself, to ask for the master.
    "connection_pool",
    # A registry, and the maintenance handlers, belong to the pool that made them: the new
    # pool makes its own.
    "himport_registry",
    "maint_notifications_pool_handler",
    "oss_cluster_maint_notifications_handler",
    "maintenance_state",
    "maintenance_notification_hash",
)
"""Connection arguments a pool adds for itself, not settings of the caller's."""

_DURING_MAINTENANCE = {
    "host": "orig_host_address",
    "socket_timeout": "orig_socket_timeout",
    "socket_connect_timeout": "orig_socket_connect_timeout",
}
"""Settings a pool moves while its server is under maintenance, and where it keeps the
values they go back to."""

_MAINTENANCE = "maint_notifications_config" in inspect.signature(ConnectionPool).parameters
"""Whether this redis-py's pools take maintenance settings (and turn them on by default)."""


def decodes(pool: ConnectionPool) -> bool:
    """Whether the connections of ``pool`` decode replies (as its encoder reads the option)."""
    return bool(pool.connection_kwargs.get("decode_responses", False))


def bytes_client(client: Redis, *, store: str) -> Redis:
    """A new client to ``client``'s server, on a pool of its own, that reads replies as bytes.

    Nothing is sent until it is used. ``store`` names the class in messages.

    Raises:
        ValueError: ``client``'s pool is of a kind that cannot be rebuilt (a subclass of
            redis-py's pools).
    """
    pool = client.connection_pool
    kind = type(pool)
    if kind not in (ConnectionPool, BlockingConnectionPool, SentinelConnectionPool):
        raise ValueError(
            f"{store} reads replies as bytes, and this client decodes them on a pool it "
            f"cannot rebuild without decoding ({kind.__module__}.{kind.__qualname__}): pass "
            "a client made with decode_responses=False (redis-py's default), such as "
            "Redis.from_url(url)"
        )
    kwargs = _settings(pool)
    made: ConnectionPool
    # The kind is one of the three exactly: each check below is of that kind alone.
    if isinstance(pool, SentinelConnectionPool):
        # redis-py leaves this constructor unannotated.
        made = StoreSentinelPool(  # type: ignore[no-untyped-call]
            pool.service_name,
            pool.sentinel_manager,
            is_master=pool.is_master,
            check_connection=pool.check_connection,
            connection_class=pool.connection_class,
            max_connections=pool.max_connections,
            **kwargs,
        )
    elif isinstance(pool, BlockingConnectionPool):
        made = StoreBlockingPool(
            connection_class=pool.connection_class,
            max_connections=pool.max_connections,
            timeout=pool.timeout,
            **kwargs,
        )
    else:
        made = StorePool(
            connection_class=pool.connection_class,
            max_connections=pool.max_connections,
            **kwargs,
        )
    # A credential provider that renews its credentials re-authenticates the connections of
    # the pools its clients were made with: this one too.
    return Redis(connection_pool=made, credential_provider=kwargs.get("credential_provider"))


def _settings(pool: ConnectionPool) -> dict[str, Any]:
    """The connection settings of ``pool``, as it was made, but for decoding replies."""
    kwargs = dict(pool.connection_kwargs)
    for name, original in _DURING_MAINTENANCE.items():
        if name in kwargs and kwargs.get(original) is not None:
            kwargs[name] = kwargs[original]
        kwargs.pop(original, None)
    for name in _PLUMBING:
        kwargs.pop(name, None)
    if "maint_notifications_config" not in kwargs and _MAINTENANCE:
        # The pool keeps its maintenance settings among these only when they are on; off,
        # they stay off (a new pool of RESP3 would otherwise turn them on).
        kwargs["maint_notifications_config"] = _maintenance_off()
    kwargs["decode_responses"] = False
    return kwargs


def _maintenance_off() -> object:
    from redis.maint_notifications import MaintNotificationsConfig

    return MaintNotificationsConfig(enabled=False)

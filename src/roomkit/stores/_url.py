"""Both stores of a back end from one URL: for a desk, the command line and the agents' processes.

- ``memory``: both in this process (a desk alone with it shows only its own requests);
- ``sqlite:///path.db`` (relative) or ``sqlite:////abs/path.db``: the pending requests
  and the rooms in one SQLite file, shared with the agent processes on the machine;
- ``redis://host:port/db`` (or ``rediss://``, ``unix://``): the pending requests and the
  rooms on Redis, shared by every process that reaches it (the stores' default key prefix,
  ``roomkit``, which an agent's stores must use too); its query takes the client's options
  (``?socket_timeout=2``) and the stores' ``timeout`` (``?timeout=2``, 5 s by default);
- ``postgresql://user:password@host:port/db`` (or ``postgres://``): the pending requests and
  the rooms in a PostgreSQL database (the stores' default schema, ``public``, which an
  agent's stores must use too); its query takes libpq's options (``?sslmode=require``) and
  the stores' ``pool_size`` (``?pool_size=32``, 16 by default, shared by both stores) and
  ``connect_timeout`` (``?connect_timeout=2``, 5 s by default).

Each back end's package loads only when its URL is used (the SQLite, Redis and PostgreSQL
ones need extras).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple, TypeVar

if TYPE_CHECKING:
    from roomkit.core.store import RoomStore
    from roomkit.stores.base import DurableStore, PendingStore

__all__ = ["OpenedStores", "close_stores", "new_sqlite_file", "open_url", "request_store"]

_SQLITE = "sqlite:///"
_REDIS = ("redis://", "rediss://", "unix://")
_POSTGRES = ("postgresql://", "postgres://")

_Store = TypeVar("_Store")


class OpenedStores(NamedTuple):
    """The two stores a URL names (a pair: ``requests, rooms = open_url(url)``)."""

    requests: PendingStore | DurableStore
    """The pending-request store (for a ``HumanInputHandler``)."""
    rooms: RoomStore
    """The room store (for a ``RoomKit``)."""


def open_url(url: str, *, create: bool = True) -> OpenedStores:
    """The pending-request store and the room store that ``url`` names.

    The stores connect on first use (or with ``async with`` / ``open()``); close them with
    :func:`close_stores`. On Redis and PostgreSQL the room store shares the request store's
    connections (``RedisRoomStore.beside``, ``PostgresRoomStore.beside``): one client or
    pool for both, which closing the request store closes.

    Args:
        url: ``memory``, ``sqlite:///path.db``, ``redis://host:port/db`` or
            ``postgresql://user:password@host:port/db`` (the forms above).
        create: ``False``: the place must hold a roomkit store already (a ``sqlite:///``
            file with its tables, a PostgreSQL schema with its tables, a Redis database
            with its keys under the prefix); its request store raises
            :class:`~roomkit.core.exceptions.StoreNotFoundError` at first use instead of
            creating one, and leaves the place as it was (for a command that only reads a
            store); a SQLite file or PostgreSQL tables made by an earlier version raise
            :class:`~roomkit.core.exceptions.StoreOutdatedError` instead of being brought
            up to date (Redis keeps no schema: its store is read as it is).

    Returns:
        The two stores, as a pair.

    Raises:
        ValueError: the URL names no known store (the message lists the forms), a Redis
            URL's ``timeout`` is not a positive number of seconds, or a PostgreSQL URL's
            ``pool_size`` is not a whole number from 1 up or its ``connect_timeout`` not a
            positive number of seconds.
        ImportError: the store's extra is not installed.
    """
    if url == "memory":
        from roomkit.core.store import InMemoryStore
        from roomkit.stores.memory import MemoryStore

        return OpenedStores(MemoryStore(), InMemoryStore())
    if url.startswith(_SQLITE):
        path = url[len(_SQLITE) :]
        if not path:
            raise ValueError("A sqlite URL names a file: sqlite:///desk.db or sqlite:////abs.db")
        from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore

        return OpenedStores(SQLiteStore(path, create=create), SQLiteRoomStore(path))
    if url.startswith(_REDIS):
        from roomkit.stores.redis import RedisRoomStore, RedisStore

        redis_store = RedisStore(url, create=create)
        return OpenedStores(redis_store, RedisRoomStore.beside(redis_store))
    if url.startswith(_POSTGRES):
        from roomkit.stores.postgres import PostgresRoomStore, PostgresStore

        postgres_store = PostgresStore(url, create=create)
        return OpenedStores(postgres_store, PostgresRoomStore.beside(postgres_store))
    if url.startswith("memory:"):
        raise ValueError(f"{url!r} is not a store URL: write memory alone, without '://'")
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:").lstrip("/") or "desk.db"
        raise ValueError(
            f"{url!r} is not a SQLite URL: use sqlite:///{path} (three slashes, then the "
            f"path; four for an absolute path: sqlite:////abs/{path})"
        )
    raise ValueError(
        f"Unknown store URL {url.split('://')[0]!r}: use memory, sqlite:///path.db, "
        "redis://host:port/db or postgresql://user:password@host:port/db"
    )


def extra_of_url(url: str) -> tuple[str, str] | None:
    """The extra the store ``url`` names needs, with its back end's module (which imports
    only with that extra installed); ``None`` for ``memory`` or a URL naming no store."""
    for prefixes, extra in ((_SQLITE, "sqlite"), (_REDIS, "redis"), (_POSTGRES, "postgres")):
        if url.startswith(prefixes):
            return extra, f"roomkit.stores.{extra}"
    return None


def new_sqlite_file(url: str) -> str | None:
    """The file, as an absolute path, that opening ``url`` makes a new store in: a
    ``sqlite:///`` file that does not exist yet, or is empty; ``None`` for any other URL,
    and for a file that holds something already (or cannot be looked at).

    A command that opens a store for others to share says so when it makes a new one: a
    path typed differently from the desk's would otherwise start a store no one else reads.
    """
    if not url.startswith(_SQLITE) or not url[len(_SQLITE) :]:
        return None
    path = os.path.abspath(url[len(_SQLITE) :])
    try:
        return path if os.path.getsize(path) == 0 else None
    except FileNotFoundError:
        return path
    except (OSError, ValueError):
        return None  # opening it says what is wrong with it


def request_store(store: object, kind: type[_Store]) -> _Store:
    """``store``, the request store a room store opens ``beside``, when it is a ``kind``
    (the back end's request store, whose connections the room store shares).

    Raises:
        TypeError: ``store`` is not a ``kind``.
    """
    if not isinstance(store, kind):
        raise TypeError(f"beside() takes a {kind.__name__}, got {type(store).__name__}")
    return store


async def close_stores(*stores: object) -> None:
    """Close the stores that have an ``async close()`` (each once, in order).

    Args:
        *stores: the stores (any object; one without ``close`` is passed over).
    """
    seen: set[int] = set()
    for store in stores:
        close = getattr(store, "close", None)
        if close is not None and id(store) not in seen:
            seen.add(id(store))
            await close()

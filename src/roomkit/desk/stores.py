"""Stores from a URL, for the desk process and the ``roomkit`` command line.

- ``memory``: both in this process (a desk alone with it shows only its own requests);
- ``sqlite:///path.db`` (relative) or ``sqlite:////abs/path.db``: the pending requests
  and the rooms in one SQLite file, shared with the agent processes on the machine;
- ``redis://host:port/db`` (or ``rediss://``, ``unix://``): the pending requests and the
  rooms on Redis, shared by every process that reaches it (the stores' default key prefix,
  ``roomkit``, which an agent's stores must use too);
- ``postgresql://user:password@host:port/db`` (or ``postgres://``): the pending requests and
  the rooms in a PostgreSQL database (the stores' default schema, ``public``, which an
  agent's stores must use too).

The SQLite, Redis and Postgres modules load only when their URL is used (they need extras).
"""

from __future__ import annotations

from roomkit.core.store import InMemoryStore, RoomStore
from roomkit.tools.human_input.stores import DurableStore, MemoryStore, PendingStore

__all__ = ["close_stores", "open_stores"]

_SQLITE = "sqlite:///"
_REDIS = ("redis://", "rediss://", "unix://")
_POSTGRES = ("postgresql://", "postgres://")


def open_stores(url: str) -> tuple[PendingStore | DurableStore, RoomStore]:
    """The pending-request store and the room store that ``url`` names.

    Raises:
        ValueError: the URL names no known store (the message lists the forms).
        ImportError: the store's extra is not installed.
    """
    if url == "memory":
        return MemoryStore(), InMemoryStore()
    if url.startswith(_SQLITE):
        path = url[len(_SQLITE) :]
        if not path:
            raise ValueError("A sqlite URL names a file: sqlite:///desk.db or sqlite:////abs.db")
        from roomkit.core.sqlite_store import SQLiteRoomStore
        from roomkit.tools.human_input.stores.sqlite import SQLiteStore

        return SQLiteStore(path), SQLiteRoomStore(path)
    if url.startswith(_REDIS):
        from roomkit.core.redis_store import RedisRoomStore
        from roomkit.tools.human_input.stores.redis import RedisStore

        return RedisStore(url), RedisRoomStore(url)
    if url.startswith(_POSTGRES):
        from roomkit.core.postgres_store import PostgresRoomStore
        from roomkit.tools.human_input.stores.postgres import PostgresStore

        return PostgresStore(url), PostgresRoomStore(url)
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


async def close_stores(*stores: object) -> None:
    """Close the stores that have an ``async close()`` (each once, in order)."""
    seen: set[int] = set()
    for store in stores:
        close = getattr(store, "close", None)
        if close is not None and id(store) not in seen:
            seen.add(id(store))
            await close()

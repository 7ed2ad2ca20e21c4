"""The durable room stores the tests run on, and where a test's deployment keeps its data.

A :class:`Place` is one SQLite file, or one key prefix on the tests' redis-server: every
store object it opens (in this process or another) sees the same rooms and questions, as
the processes of one deployment do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tests.servers.stores import DURABLE as STORES_DURABLE

from roomkit.core.store import RoomStore, TurnJournal
from roomkit.stores.base import DurableStore

DURABLE = STORES_DURABLE
"""The durable room stores: every test of the turn journal runs on each."""


class DurableRoomStore(RoomStore, TurnJournal, Protocol):
    """A room store that journals turns, opened and closed like the durable stores are."""

    async def open(self) -> None: ...
    async def close(self) -> None: ...


@dataclass(frozen=True)
class Place:
    """Where one deployment keeps its rooms and its pending questions."""

    kind: str
    """``"sqlite"``, ``"redis"`` or ``"postgres"``."""
    where: str
    """The SQLite file, or the Redis URL and the key prefix as ``url#prefix``, or the
    Postgres DSN and the schema as ``dsn#schema``."""

    @classmethod
    def sqlite(cls, path: Path) -> Place:
        return cls("sqlite", str(path))

    @classmethod
    def redis(cls, url: str, prefix: str) -> Place:
        return cls("redis", f"{url}#{prefix}")

    @classmethod
    def postgres(cls, dsn: str, schema: str) -> Place:
        return cls("postgres", f"{dsn}#{schema}")

    def rooms(self) -> DurableRoomStore:
        """A new room-store object on this place's rooms (not yet opened)."""
        if self.kind == "sqlite":
            from roomkit.stores.sqlite import SQLiteRoomStore

            return SQLiteRoomStore(self.where)
        if self.kind == "postgres":
            from roomkit.stores.postgres import PostgresRoomStore

            dsn, _, schema = self.where.partition("#")
            return PostgresRoomStore(dsn, schema=schema)
        from roomkit.stores.redis import RedisRoomStore

        url, _, prefix = self.where.partition("#")
        return RedisRoomStore(url, prefix=prefix)

    def questions(self, *, backstop_interval: float = 0.02) -> DurableStore:
        """A new pending-request store object on this place's questions."""
        if self.kind == "sqlite":
            from roomkit.stores.sqlite import SQLiteStore

            return SQLiteStore(self.where, backstop_interval=backstop_interval)
        if self.kind == "postgres":
            from roomkit.stores.postgres import PostgresStore

            dsn, _, schema = self.where.partition("#")
            return PostgresStore(dsn, schema=schema, backstop_interval=backstop_interval)
        from roomkit.stores.redis import RedisStore

        url, _, prefix = self.where.partition("#")
        return RedisStore(url, prefix=prefix, backstop_interval=backstop_interval)

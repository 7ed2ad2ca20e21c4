"""Handlers on every store: memory, SQLite, Redis and Postgres, each the same conformance
suite.

These tests do real I/O (a database file, a redis-server on loopback), so they run on the
real event loop, not the parent folder's virtual clock. Waits end on events, answers and
the stores' own deadlines, never on sleeps.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path

import pytest
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis

from roomkit.tools.human_input import HumanInputHandler

STORES = ("memory", "sqlite", "redis", "postgres")


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"real_loop": asyncio.new_event_loop}


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


HandlerFactory = Callable[..., HumanInputHandler]
"""Makes a handler on the test's store; ``no_retention=True`` keeps no outcome for replay."""


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
async def make_handler(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[HandlerFactory]:
    """Handlers sharing one store; on a durable store each has its own connection, as
    separate processes would."""
    opened: list[object] = []
    shared = HumanInputHandler()
    shared_without_retention = HumanInputHandler(retention=0)
    prefix = f"t{os.urandom(6).hex()}"
    url = request.getfixturevalue("redis_server").url if store_kind == "redis" else ""
    if store_kind == "postgres":
        url = request.getfixturevalue("postgres_server").dsn

    def factory(*, no_retention: bool = False) -> HumanInputHandler:
        if store_kind == "memory":
            return shared_without_retention if no_retention else shared
        options = {"retention_seconds": 0} if no_retention else {}
        if store_kind == "sqlite":
            from roomkit.tools.human_input.stores.sqlite import SQLiteStore

            store: object = SQLiteStore(tmp_path / "pending.db", backstop_interval=0.02, **options)
        elif store_kind == "postgres":
            from roomkit.tools.human_input.stores.postgres import PostgresStore

            store = PostgresStore(url, schema=prefix, backstop_interval=0.05, **options)
        else:
            from roomkit.tools.human_input.stores.redis import RedisStore

            store = RedisStore(url, prefix=prefix, backstop_interval=0.05, **options)
        opened.append(store)
        return HumanInputHandler(store=store)  # type: ignore[arg-type]

    yield factory
    for store in opened:
        await store.close()  # type: ignore[attr-defined]

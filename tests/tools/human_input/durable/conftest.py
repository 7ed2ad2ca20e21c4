"""Handlers on every store: memory, SQLite and Redis, each the same conformance suite.

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

STORES = ("memory", "sqlite", "redis")


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"real_loop": asyncio.new_event_loop}


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


HandlerFactory = Callable[[], HumanInputHandler]


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
    prefix = f"t{os.urandom(6).hex()}"
    url = request.getfixturevalue("redis_server").url if store_kind == "redis" else ""

    def factory() -> HumanInputHandler:
        if store_kind == "memory":
            return shared
        if store_kind == "sqlite":
            from roomkit.tools.human_input.stores.sqlite import SQLiteStore

            store: object = SQLiteStore(tmp_path / "pending.db", backstop_interval=0.02)
        else:
            from roomkit.tools.human_input.stores.redis import RedisStore

            store = RedisStore(url, prefix=prefix, backstop_interval=0.05)
        opened.append(store)
        return HumanInputHandler(store=store)  # type: ignore[arg-type]

    yield factory
    for store in opened:
        await store.close()  # type: ignore[attr-defined]

"""Store tests do real I/O (threads, files, subprocesses): they run on asyncio's own loop.

The parent directory runs async tests on a virtual clock, which jumps past timers while a
thread's answer is in flight; here every test gets a plain event loop instead. The fixtures
below serve every store test: a fake clock, the session's redis-server (``tests/servers/``)
with a key prefix per test (on the session's cluster, a schema: ``postgres_schema``), so that
tests never see each other's records, and ``backend`` / ``store``: each durable store in
turn, for the suites that hold on every one of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.servers.redis_server import RedisServer
from tests.servers.stores import DURABLE, fresh_prefix
from tests.tools.human_input.stores.postgres_kit import PostgresBackend
from tests.tools.human_input.stores.store_kit import (
    Backend,
    FakeClock,
    RedisBackend,
    SQLiteBackend,
    Store,
)


@pytest.hookimpl(tryfirst=True)
def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def server(redis_server: RedisServer) -> Iterator[RedisServer]:
    """The session's server, for a test that stops or restarts it; running again after."""
    yield redis_server
    redis_server.start()


@pytest.fixture
def prefix() -> str:
    """Keys and channel of this test alone, on the shared server."""
    return fresh_prefix()


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A plain client, to look at and tamper with what a Redis store wrote."""
    client = Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture(params=DURABLE)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """A file or a server (with a prefix of this test's own) that the test's stores share."""
    made: Backend
    if request.param == "sqlite":
        made = SQLiteBackend(tmp_path / "pending.db")
    elif request.param == "postgres":
        dsn = request.getfixturevalue("postgres_server").dsn
        made = PostgresBackend(dsn, request.getfixturevalue("postgres_schema"))
    else:
        url = request.getfixturevalue("redis_server").url
        made = RedisBackend(url, request.getfixturevalue("prefix"))
    yield made
    await made.close()


@pytest.fixture
async def store(backend: Backend, clock: FakeClock) -> AsyncIterator[Store]:
    async with backend.make(clock=clock, retention_seconds=3600) as store:
        yield store

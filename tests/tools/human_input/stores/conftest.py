"""Store tests do real I/O (threads, files, subprocesses): they run on asyncio's own loop.

The parent directory runs async tests on a virtual clock, which jumps past timers while a
thread's answer is in flight; here every test gets a plain event loop instead. The fixtures
below serve every store test: a fake clock, and one redis-server for the session (with a key
prefix per test, so that tests never see each other's records).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping

import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis
from tests.tools.human_input.stores.store_kit import FakeClock


@pytest.hookimpl(tryfirst=True)
def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def server(redis_server: RedisServer) -> Iterator[RedisServer]:
    """The session's server, for a test that stops or restarts it; running again after."""
    yield redis_server
    redis_server.start()


@pytest.fixture
def prefix() -> str:
    """Keys and channel of this test alone, on the shared server."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A plain client, to look at and tamper with what a Redis store wrote."""
    client = Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()

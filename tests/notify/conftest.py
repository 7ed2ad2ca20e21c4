"""The notifier's tests run on the real event loop against real servers: a loopback
webhook receiver, an aiosmtpd SMTP server, a SQLite file, redis-server and PostgreSQL; the
surface tests against a fake Slack Web API on loopback."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path

import pytest
from tests.notify.slack_api import SIGNING_SECRET, TOKEN, SlackAPI
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis

from roomkit.notify import Slack
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


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def store_url(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Where the test's store lives, as ``open_store`` takes it."""
    if store_kind == "sqlite":
        return f"sqlite:///{tmp_path / 'pending.db'}"
    if store_kind == "redis":
        return str(request.getfixturevalue("redis_server").url)
    if store_kind == "postgres":
        return str(request.getfixturevalue("postgres_server").dsn)
    return "memory"


@pytest.fixture
def store_prefix() -> str:
    """The Redis prefix or PostgreSQL schema of the test's store."""
    return f"t{os.urandom(6).hex()}"


@pytest.fixture
async def make_handler(
    store_kind: str, store_url: str, store_prefix: str
) -> AsyncIterator[Callable[[], HumanInputHandler]]:
    """Handlers on one store, each with its own connection as separate processes would."""
    opened: list[object] = []
    shared = HumanInputHandler()
    prefix = store_prefix

    def factory() -> HumanInputHandler:
        if store_kind == "memory":
            return shared
        store = open_store(store_url, prefix)
        opened.append(store)
        return HumanInputHandler(store=store)  # type: ignore[arg-type]

    yield factory
    for store in opened:
        await store.close()  # type: ignore[attr-defined]


def open_store(url: str, prefix: str) -> object:
    """A durable store at ``url`` (``sqlite:///path``, ``redis://``, ``postgresql://``)."""
    if url.startswith("sqlite:///"):
        from roomkit.tools.human_input.stores.sqlite import SQLiteStore

        return SQLiteStore(url.removeprefix("sqlite:///"), backstop_interval=0.02)
    if url.startswith("redis://"):
        from roomkit.tools.human_input.stores.redis import RedisStore

        return RedisStore(url, prefix=prefix, backstop_interval=0.05)
    from roomkit.tools.human_input.stores.postgres import PostgresStore

    return PostgresStore(url, schema=prefix, backstop_interval=0.05)


@pytest.fixture
async def slack_api() -> AsyncIterator[SlackAPI]:
    api = SlackAPI()
    await api.start()
    yield api
    await api.close()


@pytest.fixture
async def slack(slack_api: SlackAPI) -> AsyncIterator[Slack]:
    """A surface sending direct messages through the fake API."""
    surface = Slack(token=TOKEN, signing_secret=SIGNING_SECRET, base_url=slack_api.base_url)
    yield surface
    await surface.aclose()

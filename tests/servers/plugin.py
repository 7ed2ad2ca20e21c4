"""The fixtures of the test servers, loaded for every test by the root ``conftest.py``.

One redis-server and one PostgreSQL cluster serve a whole session (under pytest-xdist, one
per worker): a test keeps to its own key prefix or schema (``store_prefix``), so tests never
see each other's data. A test that needs a server of its own (other settings, a crash it
causes) starts one with :func:`~tests.servers.redis_server.running_redis` or
:func:`~tests.servers.postgres_server.running_postgres`.

``redis_restartable`` is the session's redis-server for a test that stops or freezes it, and
``relay`` a :class:`~tests.tools.human_input.stores.redis_relay.Relay` in front of it, for a
test that loses a reply or freezes the server just before a chosen command.

``store_kind`` runs a test once on every store (memory, SQLite, Redis, PostgreSQL);
``store_site`` says where the test's store lives and opens it; ``make_handler`` makes
handlers on it, each with its own connection, as separate processes would have.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.servers.postgres_server import PostgresServer, running_postgres
from tests.servers.redis_server import RedisServer, running_redis
from tests.servers.schema_pool import SchemaPool
from tests.servers.slack_server import SIGNING_SECRET, TOKEN, SlackAPI
from tests.servers.stores import STORES, StoreSite, fresh_prefix
from tests.tools.human_input.stores.redis_relay import Relay

from roomkit.tools.human_input import HumanInputHandler

if TYPE_CHECKING:
    from roomkit.notify import Slack

HandlerFactory = Callable[..., HumanInputHandler]
"""Makes a handler on the test's store; ``no_retention=True`` keeps no outcome for replay."""


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The session's redis-server (``appendfsync always``); tests take a key prefix each."""
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_restartable(redis_server: RedisServer) -> Iterator[RedisServer]:
    """The session's redis-server, for a test that stops or freezes it: running again after
    the test, whatever the test left it in."""
    try:
        yield redis_server
    finally:
        redis_server.resume()
        redis_server.start()


@pytest.fixture
async def relay(redis_restartable: RedisServer) -> AsyncIterator[Relay]:
    """A relay in front of the session's redis-server (a store given ``relay.url`` reaches
    the server through it); the server runs again after the test."""
    async with Relay(redis_restartable.port) as relay:
        yield relay


SOLE_DATABASE = 14
"""The Redis database a test gets to itself with ``redis_database`` (tests that pick a
database of their own for a suite use 1, 9, 11 and 12)."""


@pytest.fixture
def redis_database(redis_server: RedisServer) -> Iterator[str]:
    """The URL of a database of the session's redis-server that this test has to itself,
    empty: for code under test that keeps to the default key prefix."""
    from redis import Redis

    url = redis_server.url.removesuffix("/0") + f"/{SOLE_DATABASE}"
    with Redis.from_url(url) as raw:
        raw.flushdb()
    yield url
    with Redis.from_url(url) as raw:
        raw.flushdb()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL cluster, in a temporary folder; tests take a schema each."""
    with running_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_schemas(postgres_server: PostgresServer) -> Iterator[SchemaPool]:
    """The schemas the session's tests gave back, for later tests to take again."""
    with SchemaPool(postgres_server.dsn) as pool:
        yield pool


@pytest.fixture
def postgres_schema(postgres_schemas: SchemaPool) -> Iterator[str]:
    """A schema of the session's cluster that this test has to itself, holding no row: one
    an earlier test gave back, with the tables stores make, or a brand-new one. It is given
    back when the test ends."""
    schema = postgres_schemas.take()
    yield schema
    postgres_schemas.give_back(schema)


@pytest.fixture
def postgres_restartable(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    """The session's cluster, for a test that stops, crashes or restarts it: running again
    after the test, whatever the test left it in (no cluster of its own to make)."""
    try:
        yield postgres_server
    finally:
        if not postgres_server.running:
            postgres_server.start()


@pytest.fixture
async def slack_api() -> AsyncIterator[SlackAPI]:
    """The fake Slack Web API, started on a free loopback port."""
    api = SlackAPI()
    await api.start()
    yield api
    await api.close()


@pytest.fixture
async def slack(slack_api: SlackAPI) -> AsyncIterator[Slack]:
    """A surface sending direct messages through the fake API."""
    from roomkit.notify import Slack

    surface = Slack(token=TOKEN, signing_secret=SIGNING_SECRET, base_url=slack_api.base_url)
    yield surface
    await surface.aclose()


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Each store in turn: ``memory``, ``sqlite``, ``redis``, ``postgres``."""
    kind: str = request.param
    return kind


@pytest.fixture
def store_prefix(request: pytest.FixtureRequest) -> str:
    """The Redis prefix or PostgreSQL schema of the test's store (on PostgreSQL, from
    ``postgres_schema``)."""
    if "store_kind" in request.fixturenames and request.getfixturevalue("store_kind") == "postgres":
        return str(request.getfixturevalue("postgres_schema"))
    return fresh_prefix()


@pytest.fixture
def store_url(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Where the test's store lives, as :func:`~tests.servers.stores.open_store` takes it;
    only a Redis or PostgreSQL test starts the session's server."""
    return site_url(store_kind, tmp_path, request)


@pytest.fixture
def store_site(store_kind: str, store_url: str, store_prefix: str) -> StoreSite:
    """The test's store: its kind, its URL and its prefix or schema."""
    return StoreSite(store_kind, store_url, store_prefix)


@pytest.fixture
async def make_handler(store_site: StoreSite) -> AsyncIterator[HandlerFactory]:
    """Handlers sharing one store; on a durable store each has its own connection, as
    separate processes would."""
    opened: list[Any] = []
    shared = HumanInputHandler()
    shared_without_retention = HumanInputHandler(retention=0)

    def factory(*, no_retention: bool = False) -> HumanInputHandler:
        if not store_site.durable:
            return shared_without_retention if no_retention else shared
        options = {"retention_seconds": 0.0} if no_retention else {}
        store = store_site.open(**options)
        opened.append(store)
        return HumanInputHandler(store=store)

    yield factory
    for store in opened:
        await store.close()


def site_url(kind: str, folder: Path, request: pytest.FixtureRequest) -> str:
    """The URL of a store of ``kind`` for the test asking: a file in ``folder`` or the
    session's server."""
    if kind == "sqlite":
        return f"sqlite:///{folder / 'pending.db'}"
    if kind == "redis":
        return str(request.getfixturevalue("redis_server").url)
    if kind == "postgres":
        return str(request.getfixturevalue("postgres_server").dsn)
    return "memory"

"""Fixtures of handlers on every store (memory, SQLite, Redis, PostgreSQL), shared by the
suites that run once per store: the durable conformance suite here and the notifier's.

A conftest takes them by importing them (``from ... import make_handler as make_handler``);
each conftest that does gets its own session redis-server. ``postgres_server`` comes from
the root conftest.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis

from roomkit._audit import first_break
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores import entry_text

STORES = ("memory", "sqlite", "redis", "postgres")

HandlerFactory = Callable[..., HumanInputHandler]
"""Makes a handler on the test's store; ``no_retention=True`` keeps no outcome for replay."""


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
    """Where the test's store lives, as :func:`open_store` takes it."""
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
) -> AsyncIterator[HandlerFactory]:
    """Handlers sharing one store; on a durable store each has its own connection, as
    separate processes would."""
    opened: list[Any] = []
    shared = HumanInputHandler()
    shared_without_retention = HumanInputHandler(retention=0)

    def factory(*, no_retention: bool = False) -> HumanInputHandler:
        if store_kind == "memory":
            return shared_without_retention if no_retention else shared
        options = {"retention_seconds": 0} if no_retention else {}
        store = open_store(store_url, store_prefix, **options)
        opened.append(store)
        return HumanInputHandler(store=store)

    yield factory
    for store in opened:
        await store.close()


def open_store(url: str, prefix: str, **options: float) -> Any:
    """A durable store at ``url`` (``sqlite:///path``, ``redis://``, ``postgresql://``),
    under ``prefix`` (Redis) or in that schema (PostgreSQL)."""
    if url.startswith("sqlite:///"):
        from roomkit.stores.sqlite import SQLiteStore

        return SQLiteStore(url.removeprefix("sqlite:///"), backstop_interval=0.02, **options)
    if url.startswith("redis://"):
        from roomkit.stores.redis import RedisStore

        return RedisStore(url, prefix=prefix, backstop_interval=0.05, **options)
    from roomkit.stores.postgres import PostgresStore

    return PostgresStore(url, schema=prefix, backstop_interval=0.05, **options)


async def chain_breaks(
    handler: HumanInputHandler, pending_ids: Collection[str]
) -> dict[str, str | None]:
    """Per request, where its stored history breaks as ``roomkit audit verify`` checks it
    (``None`` when whole); a request with no history at all breaks."""
    if handler.durable:
        chains: dict[str, list[str]] = await handler.store.history_texts()  # type: ignore[union-attr]
    else:
        # On the memory store the chain is the history read back, without the seqs.
        chains = {
            pending_id: [
                entry_text({k: v for k, v in entry.items() if k != "seq"})
                for entry in await handler.history(pending_id)
            ]
            for pending_id in pending_ids
        }
    return {
        pending_id: first_break(pending_id, chains[pending_id])
        if chains.get(pending_id)
        else "no history"
        for pending_id in pending_ids
    }

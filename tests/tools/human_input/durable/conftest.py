"""Handlers on every store: memory, SQLite, Redis and Postgres, each the same conformance
suite (the fixtures are in ``tests/servers/plugin.py``).

These tests do real I/O (a database file, a redis-server on loopback), so they run on the
real event loop, not the parent folder's virtual clock. Waits end on events, answers and
the stores' own deadlines, never on sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest
from tests.tools.human_input.durable.store_fixtures import Opener, open_store


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"real_loop": asyncio.new_event_loop}


@pytest.fixture
async def open_another(store_url: str, store_prefix: str) -> AsyncIterator[Opener]:
    """Opens stores on the test's file or server, as separate processes would (with the
    store's options given, else short backstops); each is closed at the end."""
    opened: list[Any] = []

    def another(**options: float) -> Any:
        store = open_store(store_url, store_prefix, **options)
        opened.append(store)
        return store

    yield another
    for store in opened:
        await store.close()

"""Handlers on every store: memory, SQLite, Redis and Postgres, each the same conformance
suite (the fixtures are in ``store_fixtures``).

These tests do real I/O (a database file, a redis-server on loopback), so they run on the
real event loop, not the parent folder's virtual clock. Waits end on events, answers and
the stores' own deadlines, never on sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
from tests.tools.human_input.durable.store_fixtures import make_handler as make_handler
from tests.tools.human_input.durable.store_fixtures import redis_server as redis_server
from tests.tools.human_input.durable.store_fixtures import store_kind as store_kind
from tests.tools.human_input.durable.store_fixtures import store_prefix as store_prefix
from tests.tools.human_input.durable.store_fixtures import store_url as store_url


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"real_loop": asyncio.new_event_loop}

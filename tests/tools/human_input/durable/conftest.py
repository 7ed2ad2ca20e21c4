"""Handlers on every store: memory, SQLite, Redis and Postgres, each the same conformance
suite (the fixtures are in ``tests/servers/plugin.py``).

These tests do real I/O (a database file, a redis-server on loopback), so they run on the
real event loop, not the parent folder's virtual clock. Waits end on events, answers and
the stores' own deadlines, never on sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"real_loop": asyncio.new_event_loop}

"""The notifier's tests run on the real event loop against real servers: a loopback
webhook receiver, an aiosmtpd SMTP server, a SQLite file, redis-server and PostgreSQL (the
handler fixtures the durable suite uses); the surface tests against a fake Slack Web API on
loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"real_loop": asyncio.new_event_loop}

"""The notifier's tests run on the real event loop against real servers: a loopback
webhook receiver, an aiosmtpd SMTP server, a SQLite file, redis-server and PostgreSQL (the
handler fixtures the durable suite uses); the surface tests against a fake Slack Web API on
loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
from tests.notify.slack_api import slack as slack
from tests.notify.slack_api import slack_api as slack_api
from tests.tools.human_input.durable.store_fixtures import make_handler as make_handler
from tests.tools.human_input.durable.store_fixtures import redis_server as redis_server
from tests.tools.human_input.durable.store_fixtures import store_kind as store_kind
from tests.tools.human_input.durable.store_fixtures import store_prefix as store_prefix
from tests.tools.human_input.durable.store_fixtures import store_url as store_url


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"real_loop": asyncio.new_event_loop}

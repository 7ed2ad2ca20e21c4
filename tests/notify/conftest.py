"""Fixtures of the surface tests: a fake Slack Web API on loopback, and a Slack surface on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.notify.slack_api import SIGNING_SECRET, TOKEN, SlackAPI

from roomkit.notify import Slack


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

"""Fixtures for the conference channel tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.channels.conference.conference_harness import MakeConference, conference_kits


@pytest.fixture
async def make() -> AsyncIterator[MakeConference]:
    """``await make(human=..., **config_options)`` builds a conference harness."""
    async with conference_kits() as builder:
        yield builder

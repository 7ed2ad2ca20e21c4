"""Routing tests: a clock the test moves, and a directory with people away."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from routing_clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))

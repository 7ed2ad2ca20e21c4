"""Ladders on the virtual clock: a 30-minute ladder takes no real time."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from roomkit.testing import VirtualClockLoop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], VirtualClockLoop]]:
    return {"virtual_clock": VirtualClockLoop}

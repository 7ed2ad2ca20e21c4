"""Async tests here run on the virtual clock: a timeout of 300 s takes no real time."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from roomkit.testing import VirtualClockLoop
from roomkit.tools.human_input import HumanInputHandler


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], VirtualClockLoop]]:
    return {"virtual_clock": VirtualClockLoop}


@pytest.fixture
def handler() -> HumanInputHandler:
    return HumanInputHandler()

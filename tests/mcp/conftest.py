"""MCP tests skip where the ``mcp`` extra is not installed, and run on the virtual clock:
a person's 300 s take no real time."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

pytest.importorskip("mcp")

from roomkit.testing import VirtualClockLoop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], VirtualClockLoop]]:
    return {"virtual_clock": VirtualClockLoop}

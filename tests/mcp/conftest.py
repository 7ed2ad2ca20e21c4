"""MCP tests skip where the ``mcp`` extra is not installed.

In-process tests run on the virtual clock (a person's 300 s take no real time); the tests
of the command run on a real loop, since a subprocess or a socket takes real time that a
virtual clock would skip past the SDK's request timeouts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from roomkit.testing import VirtualClockLoop
from roomkit.tools.human_input import HumanInputHandler

REAL_TIME_MODULES = {
    "test_mcp_command",
    "test_mcp_http_people",
    "test_mcp_bodies",
    "test_mcp_long_arguments",
}


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    module = getattr(item, "module", None)
    if module is not None and module.__name__.rpartition(".")[2] in REAL_TIME_MODULES:
        return {"real_clock": asyncio.new_event_loop}
    return {"virtual_clock": VirtualClockLoop}


@pytest.fixture(autouse=True)
def sse_streams_stay_open() -> None:
    """Undo what a uvicorn server stopped by an earlier test left in the process.

    sse-starlette (under the SDK's SSE responses) patches uvicorn's ``handle_exit`` to set a
    process-wide flag that ends every SSE stream at once, and never clears it: after any
    server of the test run stopped, each later stream would end before its response.
    """
    try:
        from sse_starlette.sse import AppStatus
    except ImportError:
        return
    AppStatus.should_exit = False


@pytest.fixture
async def durable(tmp_path: Path) -> AsyncIterator[HumanInputHandler]:
    """A handler on a SQLite store: a request outlives its caller there."""
    # Imported here: a test of another store runs without the sqlite extra.
    from roomkit.stores.sqlite import SQLiteStore

    store = SQLiteStore(str(tmp_path / "kit.db"))
    handler = HumanInputHandler(store=store)
    yield handler
    await handler.close()
    await store.close()

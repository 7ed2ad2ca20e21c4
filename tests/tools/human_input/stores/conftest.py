"""Store tests do real I/O (threads, files, subprocesses): they run on asyncio's own loop.

The parent directory runs async tests on a virtual clock, which jumps past timers while a
thread's answer is in flight; here every test gets a plain event loop instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop}

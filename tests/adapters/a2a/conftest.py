"""Every world a test makes is closed when the test ends, on the test's own loop: the SDK's
request handlers drain their task workers and the kit ends its turns, so that no task is
left pending for the garbage collector to destroy while a later test runs.

One leak is the SDK's own: a message to a task in a terminal state is refused after the
SDK made that task's two event queues, whose dispatchers nothing closes then. Those are
cancelled here (and the SDK's tasks that end with them); any other task a test leaves
pending fails it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest
from a2a_world import OPENED


def _sdk_dispatcher(task: asyncio.Task[Any]) -> bool:
    """A dispatcher of the SDK's event queue (``EventQueueSource``)."""
    return "EventQueueSource._dispatch_loop" in getattr(task.get_coro(), "__qualname__", "")


@pytest.fixture(autouse=True)
async def closed_worlds() -> AsyncIterator[None]:
    """Close, once the test is over, each world it made (closing one twice is harmless);
    fail the test if a task it started is still pending then."""
    loop = asyncio.get_running_loop()
    started: list[asyncio.Task[Any]] = []
    before = loop.get_task_factory()

    def keep(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **options: Any
    ) -> asyncio.Task[Any]:
        # Held here, a pending task cannot be collected before the test's end looks at it.
        task = asyncio.Task(coro, loop=loop, **options)
        started.append(task)
        return task

    OPENED.clear()
    loop.set_task_factory(keep)  # type: ignore[arg-type]
    try:
        yield
        worlds = list(OPENED)
        OPENED.clear()
        for world in reversed(worlds):
            await world.close()
    finally:
        loop.set_task_factory(before)
    me = asyncio.current_task()
    pending = [task for task in started if not task.done() and task is not me]
    leaked = [task for task in pending if _sdk_dispatcher(task)]
    for task in leaked:
        task.cancel()
    await asyncio.gather(*leaked, return_exceptions=True)
    # The task's producer and consumer end with those dispatchers: the same leak.
    left = [task for task in pending if task not in leaked and not task.done()]
    assert not left, f"tasks left pending: {left}"

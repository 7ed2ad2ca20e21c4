"""Ending tasks: cancel a set of them (at once, or after a grace) and wait until every one
has ended; and telling a cancellation of the running task from a ``CancelledError`` that the
code it awaited raised on its own."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

__all__ = ["cancel_and_wait", "cancelled_from_within", "end_within"]


async def cancel_and_wait(tasks: Collection[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until every one has ended.

    What a task raises is neither raised here nor read: it stays with whoever awaits that
    task. A wait that is itself cancelled cancels the tasks no further: each ends on its own.
    """
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)


async def end_within(tasks: Collection[asyncio.Task[Any]], grace: float) -> None:
    """Give ``tasks`` ``grace`` seconds to end on their own, then cancel those still running
    and wait until every one has ended.

    What a task raises is read and dropped here: whoever stops the tasks has no use for it.
    """
    if tasks:
        await asyncio.wait(tasks, timeout=grace)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def cancelled_from_within() -> bool:
    """True when the running task is not being cancelled.

    A ``CancelledError`` caught then was raised by the code the task awaited (a future
    someone else cancelled, a bare ``raise``), not by a ``cancel()`` of the task: it is that
    code's failure, to handle like any other, not a cancellation to pass on.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() == 0

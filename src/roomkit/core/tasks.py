"""Ending tasks: cancel a set of them (at once, or after a grace) and wait until every one
has ended."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

__all__ = ["cancel_and_wait", "end_within"]


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

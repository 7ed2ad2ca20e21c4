"""Ending tasks: cancel a set of them and wait until every one has ended."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(tasks: Collection[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until every one has ended.

    What a task raises is neither raised here nor read: it stays with whoever awaits that
    task. A wait that is itself cancelled cancels the tasks no further: each ends on its own.
    """
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)

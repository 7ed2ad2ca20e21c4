"""A durable run's wait for its requests to settle, which owns none of them.

A durable run's requests belong to the run, not to the call that waits for them
(:func:`roomkit.adapters.pydantic_ai.results_for`, say, inside a web request): a wait the
handler owns (``wait()``, ``wait_settled()``) withdraws its request when it is cut, which
would settle the person's request as withdrawn because a client went away. This wait only
reads: it follows the handler's change feed, reads the request again on every hint (hints
may be lost or repeat) and at its deadline, and leaves the request open when it is cut, for
the next caller to wait on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from roomkit.tools.human_input import HumanInputHandler

__all__ = ["watched"]

T = TypeVar("T")

_AGAIN = 1.0
"""Seconds before reading again a request found open past its deadline (its expiry is
another process's to record, or the clocks disagree by a little)."""


async def watched(
    handler: HumanInputHandler, pending_id: str, look: Callable[[], Awaitable[T | None]]
) -> T:
    """What ``look`` finds about the request ``pending_id`` once it finds something
    (``None``: the request is still open), read again whenever the request may have moved.

    Raises:
        Whatever ``look`` raises (a request gone from the store, say).
    """
    moved = asyncio.Event()

    def hint(change: object) -> None:
        moved.set()  # any change: a hint about another request costs one read

    stop = handler.subscribe(hint)
    try:
        while True:
            moved.clear()
            found = await look()
            if found is not None:
                return found
            request = await handler.get_request(pending_id)
            left = None if request is None else handler.time_left(request)
            wait = None if left is None else max(left, _AGAIN)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(moved.wait(), wait)
    finally:
        stop()

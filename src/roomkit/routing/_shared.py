"""One read at a time, shared by the lookups that arrive while it is under way, and a pause
after a read that failed.

An on-call source reads its schedule (a feed, a file, PagerDuty) when a lookup needs it;
lookups meanwhile wait on that read rather than each starting their own, and the read goes on
when a lookup waiting on it gives up (the routing's bound), so that a slow source is not read
afresh, and waited on again, by every lookup. A read that failed is not tried again for a
while (:class:`Backoff`): meanwhile the lookups meet its failure at once. How long a read is
kept (``refresh``) is checked here too, the same way for every source.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.models.shown import shown

__all__ = ["RETRY", "Backoff", "joined", "refresh_seconds"]

T = TypeVar("T")

RETRY = 30.0
"""Seconds after a failed read before the source is read again."""


class Backoff:
    """The last failure of a source's reads, which stands for ``wait`` seconds after it.

    Args:
        wait: seconds a failure stands (:data:`RETRY`).
    """

    def __init__(self, wait: float = RETRY) -> None:
        self.wait = wait
        self._failed: tuple[float, Exception] | None = None

    def failed(self, when: float, error: Exception) -> None:
        """Record that a read failed with ``error`` at ``when`` (seconds of the source's
        clock)."""
        self._failed = (when, error)

    def succeeded(self) -> None:
        """Record that a read succeeded: the failure before no longer stands."""
        self._failed = None

    def standing(self, now: float) -> Exception | None:
        """The failure that stands at ``now``, so that the source is not read again yet;
        ``None`` when it may be. It comes without a traceback, to be raised afresh."""
        failed = self._failed
        if failed is not None and now - failed[0] < self.wait:
            # The same error is raised by every lookup meanwhile: each raise would add its
            # frames to the traceback of the one before, growing it (and the memory it
            # holds) for as long as the failure stands.
            return failed[1].with_traceback(None)
        return None


def refresh_seconds(what: str, value: object) -> float:
    """``value`` as a float, when it is a number of seconds from 0 (read at every lookup)
    to :data:`~roomkit.models.clock.LONGEST_TIMEOUT` (a century), or ``math.inf`` (read
    once, kept for the process's life).

    Raises:
        TypeError: it is no number (a bool is not one), naming ``what``.
        ValueError: it is below 0, over a century but finite, or NaN, naming ``what``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        # Taken, it would fail every lookup as a comparison naming nothing.
        raise TypeError(f"{what} must be a number of seconds, got {shown(value)}")
    if not (0 <= value <= LONGEST_TIMEOUT or value == math.inf):  # NaN too
        raise ValueError(
            f"{what} must be a number of seconds from 0 to {LONGEST_TIMEOUT:.0f} (a century), "
            f"or math.inf (never again), got {shown(value)}"
        )
    return float(value)


def joined(
    under_way: asyncio.Task[T] | None, start: Callable[[], Coroutine[Any, Any, T]]
) -> tuple[asyncio.Task[T], bool]:
    """The read ``under_way`` on this event loop, or a new one of ``start()``; and whether it
    is new. Await it through :func:`asyncio.shield`, so that giving up leaves it running."""
    loop = asyncio.get_running_loop()
    if under_way is not None and not under_way.done() and under_way.get_loop() is loop:
        return under_way, False
    task = loop.create_task(start())
    task.add_done_callback(_retrieved)
    return task, True


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Take the failure of a read every lookup waiting on gave up, so that it is not
    reported as never retrieved: the next lookup reads again, or meets the failure."""
    if not task.cancelled():
        task.exception()

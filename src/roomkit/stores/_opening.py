"""One attempt at opening a store, shared by every call that finds it unopened meanwhile.

A store opens on its first call. When many calls come at once (an agent's first requests,
a desk's first page), one of them starts the attempt and the others wait for it and take
its outcome: one connection check, one warning, and against a server that does not answer,
one wait that fails them all, rather than one attempt each, queued one after the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["SharedOpening"]


class SharedOpening:
    """The attempt under way, if any, for the calls that join it."""

    __slots__ = ("_attempt", "_waiting")

    def __init__(self) -> None:
        self._attempt: asyncio.Task[None] | None = None
        self._waiting = 0

    async def join(self, attempt: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait for the attempt under way, or start ``attempt()`` when there is none.

        A caller cancelled while it waits leaves the attempt running for the others (and
        for the next call, which joins it).

        Raises:
            Exception: what the attempt raised, for every call that waited on it; the
                next call starts a new attempt.
        """
        running, loop = self._attempt, asyncio.get_running_loop()
        if running is None or running.done() or running.get_loop() is not loop:
            running = self._attempt = loop.create_task(attempt())
            # When every caller has left (Ctrl-C while a server does not answer), no one
            # reads the attempt's failure: it is theirs, not the loop's to log at exit.
            running.add_done_callback(_read_outcome)
        self._waiting += 1
        try:
            await asyncio.shield(running)
        finally:
            self._waiting -= 1

    async def abandon(self) -> bool:
        """Cancel the attempt under way if no call waits on it any more (each was cancelled:
        Ctrl-C while a server does not answer), and wait until it has ended, so that closing
        the store does not sit out the attempt's connect timeout. An attempt a call still
        waits on runs on for it.

        Returns:
            Whether no attempt runs any more (``False``: one runs on for a call that waits).
        """
        running = self._attempt
        if running is None or running.done():
            return True
        if self._waiting or running.get_loop() is not asyncio.get_running_loop():
            return False
        running.cancel()
        await asyncio.wait({running})
        return True


def _read_outcome(attempt: asyncio.Task[None]) -> None:
    """Mark the outcome of a finished ``attempt`` as read."""
    if not attempt.cancelled():
        attempt.exception()

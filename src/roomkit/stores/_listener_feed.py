"""What the change feeds of the durable stores share: their listeners, and their task.

:class:`ListenerFeed` is the base of the SQLite, Redis and PostgreSQL feeds: the listeners,
and the one task that feeds them while anyone listens. How the task learns of changes
(polling a file, a pub/sub channel, LISTEN) is the subclass's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable

from roomkit.stores.base import ChangeListener, PendingChange, PendingChangeKind

__all__ = ["HINTED", "ListenerFeed"]

HINTED = {kind.value: kind for kind in PendingChangeKind if kind is not PendingChangeKind.RESYNC}
"""The kinds of change a store's message names a request by, by its first word."""


class ListenerFeed(ABC):
    """The listeners of a change feed, and the task that feeds them while anyone listens.

    The task starts with the first listener (or with the store's next call, when that
    listener came outside a running loop) and is cancelled when the last one leaves.

    Args:
        name: the task's name.
        where: how to name the store's server or file in log messages (no password).
        logger: where a listener that raises, and the feed's own faults, are reported.
    """

    def __init__(self, *, name: str, where: str, logger: logging.Logger) -> None:
        self._name = name
        self._where = where
        self._logger = logger
        self._listeners: list[ChangeListener] = []
        self._task: asyncio.Task[None] | None = None
        # Tasks cancelled because the last listener left or the feed stopped, until they end.
        self._ending: set[asyncio.Task[None]] = set()
        self.closed = False
        """Set by a store while it is closed: no task starts, listeners stay registered."""

    @property
    def listening(self) -> bool:
        """Whether anyone listens."""
        return bool(self._listeners)

    def add(self, listener: ChangeListener) -> Callable[[], None]:
        """Add ``listener``; returns the function that removes it (idempotent)."""
        self._listeners.append(listener)
        self.start()

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)
            if not self._listeners:
                self._retire()

        return remove

    def start(self) -> None:
        """Run the feed task if someone listens and a loop is running; else do nothing."""
        if self.closed or not self._listeners or (self._task and not self._task.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # Subscribed outside a loop: the store starts the feed on its next call.
            return
        self._task = loop.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        """Stop the feed task and wait for it to end; listeners stay registered."""
        self._retire()
        await self._ended()

    def emit(self, change: PendingChange) -> None:
        """Call every listener with ``change``; a listener that raises is logged and skipped."""
        for listener in tuple(self._listeners):
            try:
                listener(change)
            except Exception:
                self._logger.exception("a change listener failed on %s", change)

    def _retire(self) -> None:
        """Cancel the feed task; :meth:`_ended` waits for it to wind down."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)

    async def _ended(self, timeout: float | None = None) -> set[asyncio.Task[None]]:
        """Wait for the cancelled tasks to end; return those still running after ``timeout``."""
        ending = set(self._ending)
        if not ending:
            return set()
        _, stuck = await asyncio.wait(ending, timeout=timeout)
        return stuck

    @abstractmethod
    async def _run(self) -> None:
        """Feed the listeners until the task is cancelled."""

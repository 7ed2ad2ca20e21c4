"""What the durable stores share: argument checks, ``async with``, listeners and retention.

:class:`DurableBase` is the base of the SQLite and Redis stores. It checks and keeps the
clock, the retention and the backstop interval, opens and closes the store around
``async with``, hands listeners to the store's change feed, and says which outcomes the
retention still shows. The functions below check a request, an outcome or a deadline before
anything reaches storage, with the same message whichever store is used.

:class:`ListenerFeed` is the base of the two change feeds: the listeners, and the one task
that feeds them while anyone listens. How the task learns of changes (polling a file, a
pub/sub channel) is the subclass's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import Self

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input.stores.base import ChangeListener, PendingChange

__all__ = [
    "DurableBase",
    "ListenerFeed",
    "check_deadline",
    "check_insertable",
    "check_outcome",
    "seconds",
]

_PENDING = PendingInputStatus.PENDING


def seconds(name: str, value: object, *, zero: bool, finite: bool = True) -> float:
    """``value`` as a number of seconds, or an error that names the argument.

    Raises:
        TypeError: ``value`` is not an ``int`` or ``float`` (a ``bool`` is not a number).
        ValueError: it is NaN, negative, zero when ``zero`` is false, or infinite when
            ``finite`` is true.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if math.isnan(value) or value < 0 or (value == 0 and not zero):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"{name} must be {bound} seconds, got {value!r}")
    if finite and math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def check_insertable(request: PendingInput) -> None:
    """Refuse a request that is not pending: only a new request goes in.

    Raises:
        ValueError: ``request`` is settled already.
    """
    if request.status is not _PENDING:
        raise ValueError(f"only a pending request can be inserted, not {request.status}")


def check_outcome(status: PendingInputStatus) -> PendingInputStatus:
    """``status`` as an outcome a settle may record.

    Raises:
        ValueError: ``status`` is ``PENDING``, or not a status at all.
    """
    outcome = PendingInputStatus(status)
    if outcome is _PENDING:
        raise ValueError("settle needs an outcome: RESOLVED, REJECTED or TIMED_OUT, not PENDING")
    return outcome


def check_deadline(deadline: float) -> float:
    """``deadline`` as a float, once it is known to be a time a clock can reach.

    Raises:
        ValueError: ``deadline`` is infinite or NaN.
    """
    if not math.isfinite(deadline):
        raise ValueError(f"deadline must be a finite time, got {deadline!r}")
    return float(deadline)


class ListenerFeed(ABC):
    """The listeners of a change feed, and the task that feeds them while anyone listens.

    The task starts with the first listener (or with the store's next call, when that
    listener came outside a running loop) and is cancelled when the last one leaves.

    Args:
        name: the task's name.
        logger: where a listener that raises is reported.
    """

    def __init__(self, *, name: str, logger: logging.Logger) -> None:
        self._name = name
        self._logger = logger
        self._listeners: list[ChangeListener] = []
        self._task: asyncio.Task[None] | None = None
        # Tasks cancelled because the last listener left or the feed stopped, until they end.
        self._ending: set[asyncio.Task[None]] = set()

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
        if not self._listeners or (self._task is not None and not self._task.done()):
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


class DurableBase(ABC):
    """The part of a durable store that does not depend on where the records live.

    A subclass builds its change feed as ``_feed``, checks ``retention_seconds`` against its
    own bounds before passing it on, and supplies :meth:`open` and :meth:`close`.

    Args:
        retention_seconds: how long a settled outcome stays readable, already checked.
        backstop_interval: seconds between a waiter's re-reads; positive and finite.
        clock: the store's clock, in seconds since the epoch.

    Raises:
        TypeError: ``clock`` is not callable, or ``backstop_interval`` is not a number.
        ValueError: ``backstop_interval`` is not positive and finite.
    """

    _feed: ListenerFeed

    def __init__(
        self,
        *,
        retention_seconds: float,
        backstop_interval: float,
        clock: Callable[[], float],
    ) -> None:
        if not callable(clock):
            raise TypeError(f"clock must be callable, got {type(clock).__name__}")
        self.retention_seconds = retention_seconds
        """How long a settled outcome stays readable, in seconds on :attr:`clock`."""
        self.backstop_interval = seconds("backstop_interval", backstop_interval, zero=False)
        """Seconds between a waiter's re-reads, in case a change hint was lost."""
        self.clock = clock
        """The store's clock: deadlines and retention are measured on it."""

    @abstractmethod
    async def open(self) -> None:
        """Connect; idempotent (every other method opens lazily)."""

    @abstractmethod
    async def close(self) -> None:
        """Stop the change feed and disconnect; idempotent."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` for changes made by any process; returns the unsubscribe.

        The feed runs while anyone listens. This store's own writes reach listeners as soon
        as they are stored, and may be heard again when the feed reports them;
        :attr:`~roomkit.tools.human_input.stores.PendingChangeKind.RESYNC` says that changes
        may have been missed and listeners should re-read what they watch.

        Raises:
            TypeError: ``listener`` is not callable.
        """
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {type(listener).__name__}")
        return self._feed.add(listener)

    def _cutoff(self) -> float:
        """Outcomes settled at or before this time on :attr:`clock` have expired."""
        return float(self.clock()) - self.retention_seconds

    def _retained(
        self, settled_at: float | str | bytes | None, *, now: float | None = None
    ) -> bool:
        """Whether an outcome settled at ``settled_at`` is still readable.

        ``None`` (not settled) is always readable. Storage drops expired outcomes only
        when it purges (or on its own clock); reads hide them on the store's clock, which
        can run ahead (a fake clock, a server whose clock lags). A time that cannot be read
        hides nothing. ``now`` is the clock reading the caller already took.
        """
        if settled_at is None:
            return True
        cutoff = self._cutoff() if now is None else now - self.retention_seconds
        try:
            return float(settled_at) > cutoff
        except ValueError:
            return True

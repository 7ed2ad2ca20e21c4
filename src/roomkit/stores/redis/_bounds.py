"""A call's ``timeout`` as the queues it waits in see it: paused while it waits its turn.

A call's ``timeout`` says how long the server may take to answer it, so a call that queues
for a connection of a busy pool (:mod:`._pools`) has its bound paused while it queues
(:class:`Bound`, which :func:`~roomkit.stores.redis._link.guard` makes); so does a call that
queues for its batch (:mod:`._batch`), until its batch has a connection. A slow queue is no
outage: the queue has a bound of its own, and past it the call fails saying the store was
busy. Once a call finds the server not answering (its bound cut it, or the server could not
be reached), the queues it went through count as faulted (:class:`Turns`): the calls queued
then, and those that queue until a call gets through again, wait within their bound, so that
a frozen server still fails them in about their ``timeout``.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from contextvars import ContextVar
from typing import Self

__all__ = ["Bound", "Bounds", "Counted", "Turns"]

_BOUND: ContextVar[Counted | None] = ContextVar("roomkit_redis_bound", default=None)


class Turns:
    """A queue calls wait their turn in (for a connection, for a batch), their bounds paused
    until a call through it finds the server not answering (see the module docstring)."""

    def __init__(self) -> None:
        self.faulted = False
        """Whether the last call through it that ended found the server not answering."""
        self._queued: set[Counted] = set()

    def wait(self, bound: Counted, limit: float | None = None, busy: str = "") -> None:
        """``bound``'s call waits its turn: paused, unless the queue is faulted; cut after
        ``limit`` seconds (``None``: never), as busy with ``busy`` (what the error says)."""
        bound.went_through(self)
        if not self.faulted:
            bound.pause(limit, busy)
            self._queued.add(bound)

    def left(self, bound: Counted) -> None:
        """``bound``'s call is out of the queue, its bound still paused (a batch taken, its
        bounds now the connection's to resume)."""
        self._queued.discard(bound)

    def served(self, bound: Counted) -> None:
        """``bound``'s turn came (or its call ended): it counts again."""
        self._queued.discard(bound)
        bound.resume()

    def answered(self, answered: bool) -> None:
        """A call through the queue ended, answered or not; not answered, the calls queued
        wait within their bounds again."""
        self.faulted = not answered
        if not answered:
            queued, self._queued = self._queued, set()
            for bound in queued:
                bound.resume()


class Counted(ABC):
    """What counts towards a call's ``timeout`` in the running task, found by the pool
    (:meth:`current`) while the task is inside it: a call's bound, or a batch's."""

    def __init__(self) -> None:
        self._task = asyncio.current_task()

    def __enter__(self) -> Self:
        self._token = _BOUND.set(self)
        return self

    def __exit__(self, *_: object) -> None:
        _BOUND.reset(self._token)
        self.resume()

    @staticmethod
    def current() -> Counted | None:
        """The bound of the running task's call or batch (not of a task it started), if any."""
        bound = _BOUND.get()
        return bound if bound is not None and bound._task is asyncio.current_task() else None

    @abstractmethod
    def went_through(self, turns: Turns) -> None:
        """The call waits its turn in ``turns``: whether it is answered tells the queue."""

    @abstractmethod
    def pause(self, limit: float | None = None, busy: str = "") -> None:
        """Stop counting; meanwhile cut after ``limit`` seconds (``None``: never), as busy
        with ``busy``."""

    @abstractmethod
    def resume(self) -> None:
        """Count again; nothing when not paused."""


class Bound(Counted):
    """The ``timeout`` of one call of a store, as the queues it goes through see it: paused
    while the call waits its turn (see the module docstring).

    Args:
        cut: the ``asyncio.timeout`` around the call, entered before the call uses the pool.
    """

    def __init__(self, cut: asyncio.Timeout) -> None:
        super().__init__()
        self._cut = cut
        self._left: float | None = None
        self._busy = ""
        self._through: set[Turns] = set()
        self._ended = False
        self.outwaited: str | None = None
        """Why the call was cut while it waited its turn, past the queue's own bound."""

    def __exit__(self, *_: object) -> None:
        super().__exit__()
        # Its batch may still run, after the caller left (cancelled): the cut is gone.
        self._ended = True

    def went_through(self, turns: Turns) -> None:
        """The call waits its turn in ``turns``: whether it is answered tells the queue."""
        self._through.add(turns)

    def pause(self, limit: float | None = None, busy: str = "") -> None:
        """Stop counting, keeping the seconds left (none to keep once the bound is up);
        meanwhile cut after ``limit`` seconds (``None``: never), as busy with ``busy``."""
        when = self._cut.when()
        if self._ended or when is None or self._left is not None or self._cut.expired():
            return
        loop = asyncio.get_running_loop()
        self._left = when - loop.time()
        self._busy = busy
        self._cut.reschedule(None if limit is None else loop.time() + limit)

    def resume(self) -> None:
        """Count again from the seconds left when paused; nothing when not paused."""
        left, self._left = self._left, None
        if left is None:
            return
        if self._cut.expired():
            self.outwaited = self._busy
        else:
            self._cut.reschedule(asyncio.get_running_loop().time() + left)

    def answered(self, answered: bool) -> None:
        """The call ended: with an answer of the server, or with none (which faults the
        queues it went through and has the calls queued in them wait within their bounds)."""
        for turns in self._through:
            turns.answered(answered)


class Bounds(Counted):
    """The bounds of a batch's calls, as one, in the task that runs the batch: paused while
    it waits for a connection, as one call's bound is.

    Args:
        bounds: the bounds of the calls, paused while they waited for their batch.
    """

    def __init__(self, bounds: list[Bound]) -> None:
        super().__init__()
        self._bounds = bounds

    def went_through(self, turns: Turns) -> None:
        """The batch waits its turn in ``turns``: so does each of its calls."""
        for bound in self._bounds:
            bound.went_through(turns)

    def pause(self, limit: float | None = None, busy: str = "") -> None:
        """Stop counting each call's bound (those still paused stay as they are)."""
        for bound in self._bounds:
            bound.pause(limit, busy)

    def resume(self) -> None:
        """Count each call's bound again."""
        for bound in self._bounds:
            bound.resume()

"""One timer for many deadlines.

A timer per request costs a handle and a heap entry in the event loop each; most requests are
answered long before their deadline, so the handler keeps its own schedule and arms a single
loop timer for the earliest deadline.

Most deadlines need no sorting: requests that wait with the same timeout reach their
deadlines in the order they started waiting (the loop's clock never goes back). A deadline no
earlier than the last one queued joins a first-in, first-out queue; any other goes to a heap.
A request answered in its turn leaves the queue's head at once; one answered out of turn stays
behind as a dead entry, dropped when it reaches the head, and both structures are compacted
when dead entries outnumber live ones, so memory follows the number of open deadlines.
Deadlines of the same instant expire in the same pass of the timer (in the order they were
set within the queue, and within the heap). A queued deadline costs its request no object
of its own: a marker says where it is.

The loop timer is left armed when the last deadline goes: arming and cancelling a loop timer
per request costs more than the one early wake-up this can cause, which finds nothing due and
re-arms for the earliest live deadline, if any. The timer never fires later than that one.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from heapq import heapify, heappop, heappush
from typing import Any, Protocol

from roomkit.models.pending_input import PendingInput, PendingInputStatus

__all__ = ["QUEUED", "DeadlineQueue", "expire_overdue"]

_COMPACT_FLOOR = 64

QUEUED = True
"""The ``_deadline_entry`` of a request whose deadline is in the queue (a shared constant)."""


class DeadlineQueue:
    """Calls ``expire(request)`` once ``request.deadline`` passes, unless discarded first.

    A request's ``_deadline_entry`` says where its live deadline is kept: :data:`QUEUED`
    for the queue, a ``[when, order, request]`` list for the heap, or ``None``. A queue
    entry whose request is no longer marked queued, or a heap entry its request no longer
    points to, is dead.

    The engine takes the common steps itself, without a call: a deadline no earlier than
    :attr:`last` nor than the armed timer (:attr:`timer_when`), on :attr:`loop`, is
    appended to :attr:`queue` (its request marked :data:`QUEUED`, ``last`` moved to it);
    a request answered in its turn, at the head of :attr:`queue`, is popped from it and
    unmarked. Everything else goes through :meth:`add` and :meth:`discard`.
    """

    __slots__ = (
        "_dead",
        "_expire",
        "_heap",
        "_order",
        "_timer",
        "last",
        "loop",
        "queue",
        "timer_when",
    )

    def __init__(self, expire: Callable[[PendingInput], None]) -> None:
        self._expire = expire
        self.queue: deque[PendingInput] = deque()
        """The deadlines in the order they come, each no earlier than the one before."""
        self.last = -math.inf
        """The latest deadline queued."""
        self._heap: list[list[Any]] = []
        self._order = itertools.count()
        # Entries left behind by deadlines discarded out of turn (or moved to the heap).
        self._dead = 0
        self._timer: asyncio.TimerHandle | None = None
        self.timer_when = math.inf
        """When the loop timer fires; infinity while none is armed."""
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop the timer is armed on."""

    def add(self, loop: asyncio.AbstractEventLoop, request: PendingInput, when: float) -> None:
        """Expire ``request`` at loop time ``when`` (its ``deadline``), replacing an earlier add."""
        if request._deadline_entry is not None:
            self.discard(request)
        queue = self.queue
        if when >= self.last or not queue:
            queue.append(request)
            self.last = when
            request._deadline_entry = QUEUED
        else:
            entry = [when, next(self._order), request]
            heappush(self._heap, entry)
            request._deadline_entry = entry
        if when < self.timer_when or loop is not self.loop:
            self._arm(loop, when)

    def discard(self, request: PendingInput) -> None:
        """Forget the request's deadline; it will not expire."""
        if request._deadline_entry is None:
            return
        request._deadline_entry = None
        queue = self.queue
        if queue and queue[0] is request:
            # Answered in its turn, the common case: no entry is left behind.
            queue.popleft()
            return
        self._dead += 1
        self._drop_dead_heads()
        dead = self._dead
        if dead > _COMPACT_FLOOR and dead > len(queue) + len(self._heap) - dead:
            live = [request for request in queue if request._deadline_entry is QUEUED]
            queue.clear()
            queue.extend(live)
            heap = [entry for entry in self._heap if entry[2]._deadline_entry is entry]
            heapify(heap)
            self._heap = heap
            self._dead = 0

    def __len__(self) -> int:
        """The number of live deadlines."""
        return len(self.queue) + len(self._heap) - self._dead

    @property
    def armed(self) -> bool:
        """True while a loop timer is scheduled (it may outlive the last live deadline)."""
        return self._timer is not None

    def _drop_dead_heads(self) -> None:
        queue = self.queue
        while queue and queue[0]._deadline_entry is not QUEUED:
            queue.popleft()
            self._dead -= 1
        heap = self._heap
        while heap and heap[0][2]._deadline_entry is not heap[0]:
            heappop(heap)
            self._dead -= 1

    def _earliest(self) -> tuple[float, PendingInput] | None:
        """The earliest live deadline and its request."""
        self._drop_dead_heads()
        earliest: tuple[float, PendingInput] | None = None
        if self.queue:
            first = self.queue[0]
            assert first.deadline is not None
            earliest = (first.deadline, first)
        if self._heap:
            when, _, request = self._heap[0]
            if earliest is None or when < earliest[0]:
                earliest = (when, request)
        return earliest

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.loop = loop
        self.timer_when = when
        self._timer = loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self.timer_when = math.inf
        loop = self.loop
        assert loop is not None
        now = loop.time()
        earliest = self._earliest()
        while earliest is not None and earliest[0] <= now:
            request = earliest[1]
            if request._deadline_entry is QUEUED:
                self.queue.popleft()
            else:
                heappop(self._heap)
            request._deadline_entry = None
            self._expire(request)
            earliest = self._earliest()
        if earliest is not None:
            self._arm(loop, earliest[0])


class _TimingOut(Protocol):
    def clock(self) -> float: ...

    def time_out(self, request: PendingInput) -> Awaitable[PendingInput | None]: ...


async def expire_overdue(
    engine: _TimingOut, requests: Iterable[PendingInput]
) -> list[PendingInput]:
    """``requests`` as they stand once those past their deadline (on ``engine``'s clock)
    have timed out through ``engine``; those that left its store are dropped."""
    current: list[PendingInput] = []
    for request in requests:
        deadline = request.deadline
        pending = request.status is PendingInputStatus.PENDING
        if pending and deadline is not None and deadline - engine.clock() <= 0:
            found = await engine.time_out(request)
            if found is None:
                continue
            request = found
        current.append(request)
    return current

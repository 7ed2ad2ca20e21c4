"""One timer for many deadlines.

A timer per request costs a handle and a heap entry in the event loop each; most requests are
answered long before their deadline, so the handler keeps its own schedule and arms a single
loop timer for the earliest deadline.

The schedule needs no sorting: requests that wait with the same timeout reach their deadlines
in the order they started waiting (the loop's clock never goes back), so each timeout value
gets a first-in, first-out lane of requests, and the earliest deadline is at the head of one
of the lanes. A request answered in its turn leaves from the head at once; one answered out of
turn stays behind as a dead entry, skipped when it reaches the head, and the lanes are
compacted when dead entries outnumber live ones, so memory follows the number of open
deadlines.

The loop timer is left armed when the last deadline goes: arming and cancelling a loop timer
per request costs more than the one early wake-up this can cause, which finds nothing due and
re-arms for the earliest live deadline, if any. The timer never fires later than that one.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable

from roomkit.models.pending_input import PendingInput

__all__ = ["DeadlineQueue"]

_COMPACT_FLOOR = 64


class _Lane(deque[PendingInput]):
    """The requests waiting with one timeout, in deadline order."""

    __slots__ = ("timeout",)

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.timeout = timeout


class DeadlineQueue:
    """Calls ``expire(request)`` once ``request.deadline`` passes, unless discarded first.

    A request is live here while its ``_deadline_lane`` is the lane that holds it.
    """

    __slots__ = ("_dead", "_expire", "_lanes", "_live", "_loop", "_timer", "_timer_when")

    def __init__(self, expire: Callable[[PendingInput], None]) -> None:
        self._expire = expire
        self._lanes: dict[float, _Lane] = {}
        self._live = 0
        self._dead = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = math.inf
        self._loop: asyncio.AbstractEventLoop | None = None

    def add(self, loop: asyncio.AbstractEventLoop, request: PendingInput, timeout: float) -> None:
        """Expire ``request`` at its ``deadline``, which is ``timeout`` seconds from now.

        A request already here is moved: its earlier entry is discarded.
        """
        if request._deadline_lane is not None:
            self.discard(request)
        lane = self._lanes.get(timeout)
        if lane is None:
            lane = self._lanes[timeout] = _Lane(timeout)
        lane.append(request)
        request._deadline_lane = lane
        self._live += 1
        when = request.deadline
        assert when is not None
        if when < self._timer_when or loop is not self._loop:
            self._arm(loop, when)

    def discard(self, request: PendingInput) -> None:
        """Forget the request's deadline; it will not expire."""
        lane = request._deadline_lane
        if lane is None:
            return
        request._deadline_lane = None
        self._live -= 1
        if lane[0] is request:
            lane.popleft()
            self._drop_dead_heads(lane)
        else:
            self._dead += 1
            if self._dead > _COMPACT_FLOOR and self._dead > self._live:
                self._compact()

    def __len__(self) -> int:
        """The number of live deadlines."""
        return self._live

    @property
    def armed(self) -> bool:
        """True while a loop timer is scheduled (it may outlive the last live deadline)."""
        return self._timer is not None

    def _drop_dead_heads(self, lane: _Lane) -> None:
        while lane and lane[0]._deadline_lane is not lane:
            lane.popleft()
            self._dead -= 1
        if not lane:
            del self._lanes[lane.timeout]

    def _compact(self) -> None:
        for lane in list(self._lanes.values()):
            live = [request for request in lane if request._deadline_lane is lane]
            lane.clear()
            lane.extend(live)
            if not lane:
                del self._lanes[lane.timeout]
        self._dead = 0

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._loop = loop
        self._timer_when = when
        self._timer = loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_when = math.inf
        loop = self._loop
        assert loop is not None
        now = loop.time()
        for lane in list(self._lanes.values()):
            self._drop_dead_heads(lane)
            while lane:
                request = lane[0]
                deadline = request.deadline
                assert deadline is not None
                if deadline > now:
                    break
                lane.popleft()
                request._deadline_lane = None
                self._live -= 1
                self._expire(request)
                self._drop_dead_heads(lane)
        heads = [lane[0].deadline for lane in self._lanes.values()]
        earliest = min((when for when in heads if when is not None), default=None)
        if earliest is not None and self._timer is None:
            self._arm(loop, earliest)

"""What the durable waits keep per request: its watch, and one schedule of their deadlines.

A :class:`Watch` holds this process's waits on one request and the future its settling
completes. :class:`Deadlines` is the sweeper's one timer: a heap of the deadlines the watches
hold, whose nearest tells the sweeper when to wake, and whose due entries it times out. An
entry that a changed or finished watch leaves behind is dropped when it reaches the top, and
the heap is compacted when such entries outnumber the live ones, so that memory follows the
number of deadlines watched.
"""

from __future__ import annotations

import asyncio
import itertools
from heapq import heapify, heappop, heappush

from roomkit.models.pending_input import PendingInput

__all__ = ["Deadlines", "Watch"]

# The heap is compacted once its dead entries outnumber the live ones and this.
_COMPACT_FLOOR = 64


class Watch:
    """The waits of this process on one request, and the future its settling completes.

    ``sweeper_lost`` completes when the sweeper ends while these waits still need it;
    ``watching`` is cleared once the last of them ended.
    """

    __slots__ = ("record", "settled", "sweeper_lost", "waiters", "watching")

    def __init__(self, record: PendingInput) -> None:
        self.record = record
        loop = asyncio.get_running_loop()
        self.settled: asyncio.Future[PendingInput] = loop.create_future()
        self.sweeper_lost: asyncio.Future[None] = loop.create_future()
        self.waiters = 1
        self.watching = True

    def lose_sweeper(self) -> None:
        if not self.sweeper_lost.done():
            self.sweeper_lost.set_result(None)

    def fail(self, error: Exception) -> None:
        if not self.settled.done():
            self.settled.set_exception(error)

    def forget(self) -> None:
        """No wait is left: drop the future without an unread outcome behind."""
        self.watching = False
        if not self.settled.done():
            self.settled.cancel()
        elif not self.settled.cancelled():
            self.settled.exception()


class Deadlines:
    """The deadlines of the watched requests, on the store's clock, nearest first.

    A heap entry is ``(when, order, watch, deadline)``: the sweeper looks at ``watch`` at
    ``when``, which is its deadline unless the store refused the timeout there (then later).
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Watch, float]] = []
        self._order = itertools.count()
        self.armed = 0
        """How many watches hold a deadline."""

    def set(self, watch: Watch, deadline: float) -> None:
        """Watch ``deadline`` for ``watch``'s request (its first, or an earlier one)."""
        if watch.record.deadline == deadline:
            return
        if watch.record.deadline is None:
            self.armed += 1
        watch.record.deadline = deadline
        self._push(deadline, watch, deadline)

    def retry(self, watch: Watch, when: float) -> None:
        """Look at ``watch``'s deadline again at ``when``: its timeout is not recorded yet."""
        if watch.record.deadline is not None:
            self._push(when, watch, watch.record.deadline)

    def drop(self, watch: Watch) -> None:
        """The last wait on ``watch`` ended (it was forgotten): stop counting its deadline."""
        if watch.record.deadline is not None:
            self.armed -= 1
            self._compact()

    def clear(self) -> None:
        """Nothing is watched any more."""
        self._heap.clear()

    def nearest(self) -> float | None:
        """When the nearest live entry is due, or ``None`` when none is."""
        heap = self._heap
        while heap:
            if self._live(heap[0]):
                return heap[0][0]
            heappop(heap)
        return None

    def pop_due(self, now: float) -> Watch | None:
        """Take the watch of the nearest entry due at ``now``, or ``None`` when none is."""
        when = self.nearest()
        if when is None or when > now:
            return None
        return heappop(self._heap)[2]

    def _push(self, when: float, watch: Watch, deadline: float) -> None:
        heappush(self._heap, (when, next(self._order), watch, deadline))
        self._compact()

    @staticmethod
    def _live(entry: tuple[float, int, Watch, float]) -> bool:
        _, _, watch, deadline = entry
        return watch.watching and watch.record.deadline == deadline

    def _compact(self) -> None:
        if len(self._heap) > 2 * self.armed + _COMPACT_FLOOR:
            self._heap = [entry for entry in self._heap if self._live(entry)]
            heapify(self._heap)

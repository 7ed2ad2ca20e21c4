"""One timer for many deadlines.

A timer per request costs a handle and a heap entry in the event loop each; most requests are
answered long before their deadline, so the handler keeps its own heap and arms a single loop
timer for the earliest entry. Cancelled entries are dropped lazily, and the heap is compacted
when they outnumber the live ones, so memory follows the number of open deadlines.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Any

__all__ = ["DeadlineQueue"]

_COMPACT_FLOOR = 64


class DeadlineQueue:
    """Calls ``expire(key)`` once each deadline passes, unless the entry was cancelled."""

    __slots__ = ("_dead", "_expire", "_heap", "_loop", "_seq", "_timer")

    def __init__(self, expire: Callable[[Any], None]) -> None:
        self._expire = expire
        self._heap: list[list[Any]] = []
        self._seq = itertools.count()
        self._dead = 0
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def add(self, loop: asyncio.AbstractEventLoop, when: float, key: Any) -> list[Any]:
        """Schedule ``expire(key)`` at loop time ``when``; return the entry, for cancel()."""
        entry = [when, next(self._seq), key]
        heapq.heappush(self._heap, entry)
        timer = self._timer
        if timer is None or when < timer.when() or loop is not self._loop:
            if timer is not None:
                timer.cancel()
            self._loop = loop
            self._timer = loop.call_at(when, self._fire)
        return entry

    def cancel(self, entry: list[Any]) -> None:
        """Forget an entry; its key will not expire."""
        if entry[2] is None:
            return
        entry[2] = None
        self._dead += 1
        live = len(self._heap) - self._dead
        if live == 0:
            self._heap.clear()
            self._dead = 0
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        elif self._dead > _COMPACT_FLOOR and self._dead > live:
            self._heap[:] = [e for e in self._heap if e[2] is not None]
            heapq.heapify(self._heap)
            self._dead = 0

    def __len__(self) -> int:
        """The number of live entries."""
        return len(self._heap) - self._dead

    @property
    def armed(self) -> bool:
        """True while a loop timer is scheduled."""
        return self._timer is not None

    def _fire(self) -> None:
        self._timer = None
        loop = self._loop
        assert loop is not None
        heap = self._heap
        now = loop.time()
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            key = entry[2]
            if key is None:
                self._dead -= 1
                continue
            entry[2] = None
            self._expire(key)
        if len(heap) == self._dead:
            heap.clear()
            self._dead = 0
        else:
            self._timer = loop.call_at(heap[0][0], self._fire)

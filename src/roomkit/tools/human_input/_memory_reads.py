"""What the memory engine reads back: requests, listings, changes and its statistics.

Nothing here changes a request; the engine (:mod:`._memory_engine`) holds the store, the
change listeners and the deadline schedule these read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.base import ChangeListener, PendingStore, SettledHistory
from roomkit.tools.human_input._announce import listen_to
from roomkit.tools.human_input._deadlines import DeadlineQueue
from roomkit.tools.human_input.statistics import HandlerStatistics

__all__ = ["MemoryReads"]

_PENDING = PendingInputStatus.PENDING
_get_running_loop = asyncio.get_running_loop


class MemoryReads:
    """The memory engine's reads, over the engine's store, listeners and deadlines."""

    __slots__ = ()

    _store: PendingStore
    _listeners: list[ChangeListener]
    _deadlines: DeadlineQueue

    def local(self, pending_id: str) -> PendingInput | None:
        """The active request with this id, read without a round trip."""
        return self._store.get(pending_id)

    async def get_request(self, pending_id: str) -> PendingInput | None:
        return self._store.get(pending_id) or self._store.get_settled(pending_id)

    async def list_pending(
        self, room_id: str | None, actor_id: str | None, channel_id: str | None
    ) -> list[PendingInput]:
        return [
            request
            for request in self._store.active()
            if request.status is _PENDING
            and (room_id is None or request.room_id == room_id)
            and (actor_id is None or request.actor_id == actor_id)
            and (channel_id is None or request.channel_id == channel_id)
        ]

    async def list_settled(
        self, actor_ids: Collection[str | None] | None, limit: int
    ) -> list[PendingInput]:
        store = self._store
        if isinstance(store, SettledHistory):
            return store.list_settled(actor_ids=actor_ids, limit=limit)
        return []

    def clock(self) -> float:
        """The clock deadlines are set on: the event loop's."""
        return _get_running_loop().time()

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        return listen_to(self._listeners, listener)

    def pending(self) -> dict[str, PendingInput]:
        return {request.pending_id: request for request in self._store.active()}

    def statistics(self, notifications: int) -> HandlerStatistics:
        active = self._store.active()
        parked = 0
        for request in active:
            waiters = request._waiters
            if isinstance(waiters, list):
                parked += sum(1 for waiter in waiters if not waiter.done())
            elif waiters is not None and not waiters.done():
                parked += 1
        deadlines = self._deadlines
        timers = 1 if deadlines.armed else 0
        return HandlerStatistics(len(active), parked, len(deadlines), notifications, timers)

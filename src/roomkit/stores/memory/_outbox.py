"""The outbox of a handler whose requests live in this process (the memory store).

Its items are kept as the durable stores keep theirs, and besides, a request is *finished*
once its ending and every item of it are done: its items then answer only
:meth:`~roomkit.stores.outbox.Outbox.items_for` (what became of its notices) and keep a late
repeat of a step from being added again. The memory outbox keeps the items of the newest
finished requests only, so that a process telling people about requests for weeks holds what
a count of requests holds, not what a week of them does.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from roomkit.stores.outbox import ENDING, KEEP_DONE, Claim, ClaimingOutbox, OutboxItem, step_id

__all__ = ["FINISHED_KEPT", "Finished", "MemoryOutbox"]

_PURGE_EVERY = 60.0
"""Seconds between the memory outbox's purges."""
FINISHED_KEPT = 1024
"""Finished requests whose items the memory outbox keeps, by default."""


class Finished:
    """Finished requests in the order they finished, at most ``keep`` of them.

    Args:
        keep: how many finished requests to keep (at least 1).

    Raises:
        TypeError: ``keep`` is not an int.
        ValueError: ``keep`` is below 1.
    """

    __slots__ = ("_order", "keep")

    def __init__(self, keep: int = FINISHED_KEPT) -> None:
        if isinstance(keep, bool) or not isinstance(keep, int):
            raise TypeError(f"keep must be an int, got {type(keep).__name__}")
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self.keep = keep
        self._order: dict[str, None] = {}

    def add(self, pending_id: str) -> list[str]:
        """Note that ``pending_id`` finished; the requests to forget now, oldest first."""
        self._order.pop(pending_id, None)
        self._order[pending_id] = None
        gone: list[str] = []
        while len(self._order) > self.keep:
            oldest = next(iter(self._order))
            del self._order[oldest]
            gone.append(oldest)
        return gone

    def discard(self, pending_id: str) -> None:
        """``pending_id`` is not finished (any more): an item of it was added, or purged."""
        self._order.pop(pending_id, None)

    def __len__(self) -> int:
        return len(self._order)


class MemoryOutbox(ClaimingOutbox):
    """The outbox of a handler whose requests live in this process (the memory store).

    A heap of due times per lane finds the items due without looking at the others; an
    entry whose item has moved since (claimed, renewed, done) is dropped when it comes up.
    A finished request's items (its ending and every other item done) are dropped a week
    after its ending (:meth:`purge`), or sooner, once ``finished`` requests have finished
    after it.

    Args:
        finished: how many finished requests keep their items (at least 1).

    Raises:
        TypeError, ValueError: ``finished`` is not an int of at least 1.
    """

    def __init__(self, *, finished: int = FINISHED_KEPT) -> None:
        self._finished = Finished(finished)
        self._items: dict[str, OutboxItem] = {}
        self._owners: dict[str, str] = {}
        self._heaps: dict[str, list[tuple[float, str]]] = {}
        self._by_request: dict[str, set[str]] = {}
        self._unended: set[str] = set()
        self._next_purge = -math.inf

    def _put(self, item: OutboxItem) -> None:
        self._items[item.item_id] = item
        if not item.done:
            heapq.heappush(self._heaps.setdefault(item.lane, []), (item.due, item.item_id))

    def _current(self, due: float, item_id: str) -> OutboxItem | None:
        item = self._items.get(item_id)
        return item if item is not None and not item.done and item.due == due else None

    def _head(self, lane: str) -> tuple[float, str] | None:
        """The earliest entry of ``lane`` whose item is still due then, or ``None``."""
        heap = self._heaps.get(lane, [])
        while heap and self._current(*heap[0]) is None:
            heapq.heappop(heap)
        return heap[0] if heap else None

    async def add(self, items: Sequence[OutboxItem]) -> int:
        new = 0
        now = max((item.created for item in items), default=-math.inf)
        if items and now >= self._next_purge:
            # The handler's clock is the event loop's: an added item's creation tells it.
            self._next_purge = now + _PURGE_EVERY
            await self.purge(now - KEEP_DONE)
        for item in items:
            if item.item_id not in self._items:
                self._put(item)
                self._by_request.setdefault(item.pending_id, set()).add(item.item_id)
                self._finished.discard(item.pending_id)
                if item.item_id == step_id(item.pending_id, ENDING):
                    self._unended.discard(item.pending_id)
                elif step_id(item.pending_id, ENDING) not in self._items:
                    self._unended.add(item.pending_id)
                new += 1
        return new

    async def _claim_due(self, claim: Claim) -> list[OutboxItem]:
        named = claim.lanes or {}
        claimed = []
        for lane, room in named.items():
            claimed += self._take(claim, [lane], room)
        others = [lane for lane in self._heaps if lane not in named]
        return claimed + self._take(claim, others, claim.limit)

    def _take(self, claim: Claim, lanes: list[str], limit: int) -> list[OutboxItem]:
        """Up to ``limit`` items due at ``now`` among ``lanes``, earliest first."""
        claimed: list[OutboxItem] = []
        while len(claimed) < limit:
            heads = [(head, lane) for lane in lanes if (head := self._head(lane)) is not None]
            if not heads:
                break
            (due, item_id), lane = min(heads)
            if due > claim.now:
                break
            heapq.heappop(self._heaps[lane])
            # Handed out as claimed, due at its lease's end, as the durable stores hand it:
            # renewing it until its ``due`` keeps it held, not due again at once.
            item = replace(self._items[item_id], due=claim.until)
            claimed.append(item)
            self._put(item)
            self._owners[item_id] = claim.owner
        return claimed

    async def renew(
        self, item_id: str, owner: str, until: float, *, receipt: dict[str, Any] | None = None
    ) -> bool:
        item = self._items.get(item_id)
        if item is None or item.done or self._owners.get(item_id) != owner:
            return False
        kept = item.receipt if receipt is None else receipt
        self._put(replace(item, due=until, receipt=kept))
        return True

    async def complete(self, item_id: str, receipt: dict[str, Any] | None) -> None:
        item = self._items.get(item_id)
        if item is not None:
            self._items[item_id] = replace(item, done=True, receipt=receipt)
            self._owners.pop(item_id, None)
            if self._done_with(item.pending_id):
                for pending_id in self._finished.add(item.pending_id):
                    self._drop(pending_id)

    async def postpone(
        self, item_id: str, due: float, receipt: dict[str, Any] | None = None
    ) -> None:
        item = self._items.get(item_id)
        if item is not None and not item.done:
            kept = item.receipt if receipt is None else receipt
            self._put(replace(item, due=due, attempts=item.attempts + 1, receipt=kept))
            self._owners.pop(item_id, None)

    async def items_for(self, pending_id: str) -> list[OutboxItem]:
        return sorted(
            (self._items[i] for i in self._by_request.get(pending_id, ())),
            key=lambda i: (i.created, i.item_id),
        )

    async def next_due(self, lanes: Collection[str] | None = None) -> float | None:
        heads = [self._head(lane) for lane in (self._heaps if lanes is None else lanes)]
        return min((head[0] for head in heads if head is not None), default=None)

    async def unended(self) -> list[str]:
        return list(self._unended)

    async def purge(self, before: float) -> int:
        gone = 0
        for pending_id, ids in list(self._by_request.items()):
            ending = self._items.get(step_id(pending_id, ENDING))
            if ending is None or not ending.done or ending.created >= before:
                continue
            if all(self._items[i].done for i in ids):
                self._drop(pending_id)
                gone += len(ids)
        return gone

    def _done_with(self, pending_id: str) -> bool:
        """Whether ``pending_id``'s ending and every item of it are done."""
        ending = self._items.get(step_id(pending_id, ENDING))
        ids = self._by_request.get(pending_id, ())
        return ending is not None and ending.done and all(self._items[i].done for i in ids)

    def _drop(self, pending_id: str) -> None:
        for item_id in self._by_request.pop(pending_id, ()):
            del self._items[item_id]
            self._owners.pop(item_id, None)
        self._finished.discard(pending_id)

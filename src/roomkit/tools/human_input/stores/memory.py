"""The default store: requests and a bounded retention of outcomes in this process's memory."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input.stores._durable_base import creation_order
from roomkit.tools.human_input.stores.base import check_settled_listing

__all__ = ["MemoryStore"]

_PENDING = PendingInputStatus.PENDING


class MemoryStore:
    """Active requests in a dict; the last ``retention`` outcomes replayable.

    The retention fills when an outcome is recorded, not when someone reads it, and evicts
    the oldest first. ``retention=0`` switches replay off: a settle still hands its outcome
    to the waits in this process, and nothing is replayable after.
    """

    __slots__ = ("_active", "_keys", "_order", "_retained", "retention")

    def __init__(self, *, retention: int = 128) -> None:
        if isinstance(retention, bool) or not isinstance(retention, int):
            raise TypeError(f"retention must be an int, got {type(retention).__name__}")
        if retention < 0:
            raise ValueError(f"retention must be >= 0 (0 switches replay off), got {retention}")
        self.retention = retention
        self._active: dict[str, PendingInput] = {}
        self._retained: dict[str, PendingInput] = {}
        # Eviction order, kept apart: finding a dict's first key walks past the slots its
        # deleted keys left behind, a deque's popleft does not.
        self._order: deque[str] = deque()
        self._keys: dict[str, str] = {}

    def by_key(self, key: str) -> PendingInput | None:
        """The active or retained request created with idempotency ``key``, or ``None``."""
        pending_id = self._keys.get(key)
        if pending_id is None:
            return None
        return self._active.get(pending_id) or self._retained.get(pending_id)

    def add(self, request: PendingInput) -> None:
        self._active[request.pending_id] = request
        if request.key is not None:
            self._keys[request.key] = request.pending_id

    def get(self, pending_id: str) -> PendingInput | None:
        return self._active.get(pending_id)

    def get_settled(self, pending_id: str) -> PendingInput | None:
        return self._retained.get(pending_id)

    def settle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        withdrawn: bool = False,
        settled_by: str | None = None,
    ) -> PendingInput | None:
        request = self._active.get(pending_id)
        if request is None or request.status is not _PENDING:
            return None
        request.status = status
        request.result = result
        request.reject_reason = reason
        request.withdrawn = withdrawn
        if settled_by is not None:
            request.settled_by = settled_by
        if self.retention:
            self._retained[pending_id] = request
            order = self._order
            order.append(pending_id)
            if len(order) > self.retention:
                evicted = self._retained.pop(order.popleft())
                if evicted.key is not None and evicted.pending_id not in self._active:
                    self._forget_key(evicted)
        return request

    def retire(self, request: PendingInput) -> None:
        self._active.pop(request.pending_id, None)
        if request.key is not None and request.pending_id not in self._retained:
            self._forget_key(request)

    def _forget_key(self, request: PendingInput) -> None:
        if request.key is not None and self._keys.get(request.key) == request.pending_id:
            del self._keys[request.key]

    def active(self) -> list[PendingInput]:
        """The active requests by creation time (then id), as the durable stores list them."""
        # Requests mostly arrive in creation order: the sort then only checks it.
        return sorted(self._active.values(), key=creation_order)

    def list_settled(
        self, *, actor_ids: Collection[str | None] | None = None, limit: int = 50
    ) -> list[PendingInput]:
        """The most recently settled requests still retained, newest first.

        Arguments as :meth:`~roomkit.tools.human_input.stores.base.SettledHistory.list_settled`.
        """
        wanted = check_settled_listing(actor_ids, limit)
        found: list[PendingInput] = []
        for pending_id in reversed(self._order):
            request = self._retained[pending_id]
            if wanted is None or request.actor_id in wanted:
                found.append(request)
                if len(found) == limit:
                    break
        return found

    def __len__(self) -> int:
        return len(self._active)

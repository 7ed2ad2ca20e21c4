"""The default store: requests and a bounded retention of outcomes in this process's memory."""

from __future__ import annotations

from collections import deque

from roomkit.models.pending_input import PendingInput, PendingInputStatus

__all__ = ["MemoryStore"]

_PENDING = PendingInputStatus.PENDING


class MemoryStore:
    """Active requests in a dict; the last ``retention`` outcomes replayable.

    The retention fills when an outcome is recorded, not when someone reads it, and evicts
    the oldest first. ``retention=0`` switches replay off.
    """

    __slots__ = ("_active", "_order", "_retained", "retention")

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

    def add(self, request: PendingInput) -> None:
        self._active[request.pending_id] = request

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
    ) -> PendingInput | None:
        request = self._active.get(pending_id)
        if request is None or request.status is not _PENDING:
            return None
        request.status = status
        request.result = result
        request.reject_reason = reason
        request.withdrawn = withdrawn
        if self.retention:
            self._retained[pending_id] = request
            order = self._order
            order.append(pending_id)
            if len(order) > self.retention:
                del self._retained[order.popleft()]
        return request

    def retire(self, request: PendingInput) -> None:
        self._active.pop(request.pending_id, None)

    def active(self) -> list[PendingInput]:
        return list(self._active.values())

    def __len__(self) -> int:
        return len(self._active)

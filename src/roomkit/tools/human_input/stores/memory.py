"""The default store: requests and a bounded retention of outcomes in this process's memory."""

from __future__ import annotations

from roomkit.models.pending_input import PendingInput, PendingInputStatus

__all__ = ["MemoryStore"]

_PENDING = PendingInputStatus.PENDING


class MemoryStore:
    """Active requests in a dict; the last ``retention`` outcomes replayable.

    The retention fills when an outcome is recorded, not when someone reads it, and evicts
    the oldest first. ``retention=0`` switches replay off.
    """

    __slots__ = ("_active", "_retained", "retention")

    def __init__(self, *, retention: int = 128) -> None:
        if isinstance(retention, bool) or not isinstance(retention, int):
            raise TypeError(f"retention must be an int, got {type(retention).__name__}")
        if retention < 0:
            raise ValueError(f"retention must be >= 0 (0 switches replay off), got {retention}")
        self.retention = retention
        self._active: dict[str, PendingInput] = {}
        self._retained: dict[str, PendingInput] = {}

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
            retained = self._retained
            retained[pending_id] = request
            if len(retained) > self.retention:
                del retained[next(iter(retained))]
        return request

    def retire(self, request: PendingInput) -> None:
        self._active.pop(request.pending_id, None)

    def active(self) -> list[PendingInput]:
        return list(self._active.values())

    def __len__(self) -> int:
        return len(self._active)

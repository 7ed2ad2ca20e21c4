"""The interface a human-input store offers to :class:`HumanInputHandler`.

A store keeps the active requests and the settled outcomes that stay replayable. Its one
state transition is :meth:`PendingStore.settle`, a check-and-set: whoever calls it first on a
pending request wins and is told ``True``; everyone after is told ``False`` and the recorded
outcome stays as it is. A store shared by several processes must keep that promise across
all of them.
"""

from __future__ import annotations

from typing import Protocol

from roomkit.models.pending_input import PendingInput, PendingInputStatus

__all__ = ["PendingStore"]


class PendingStore(Protocol):
    """Where a handler keeps its requests and their outcomes."""

    def add(self, request: PendingInput) -> None:
        """Record a new, pending request; it is answerable from now on."""

    def get(self, pending_id: str) -> PendingInput | None:
        """The active request with this id, settled or not, or ``None``."""

    def get_settled(self, pending_id: str) -> PendingInput | None:
        """The retained outcome of a request no longer active, or ``None``."""

    def settle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        withdrawn: bool = False,
    ) -> PendingInput | None:
        """Settle the request if it is still pending; return it when this call won.

        Returns ``None`` when the id is not active or the request was already settled: the
        recorded outcome is then unchanged.
        """

    def retire(self, request: PendingInput) -> None:
        """Drop a request from the active set; its outcome stays in the retention."""

    def active(self) -> list[PendingInput]:
        """The active requests, oldest first."""

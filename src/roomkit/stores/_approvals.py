"""The approvals' part of a durable store: what its façade hands it, declared once.

A durable store (SQLite, Redis, PostgreSQL) keeps the requests' approvers and history chains
in a part on its connection (each back end's ``_approvals`` module), which the façade
(:class:`~roomkit.stores._facade.PartsFacade`) calls once it has checked every entry
JSON-serialisable and every notice's body JSON-ready. :class:`ApprovalsPart` says what each
call promises; each back end's part says how its transaction or script keeps it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from roomkit.models.pending_input import PendingInput
from roomkit.stores.outbox import OutboxItem

__all__ = ["ApprovalsPart"]


class ApprovalsPart(ABC):
    """Approvers and history chains on one store's connection."""

    __slots__ = ()

    @abstractmethod
    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any] | None = None
    ) -> PendingInput | None:
        """Add ``actors`` to the pending request's approvers, and append ``entry`` (when
        given) to its history in the same write; the record, or ``None`` when not pending."""

    @abstractmethod
    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` to the request's chain, linked again when the head moved; its
        seq."""

    @abstractmethod
    async def append_history_at(
        self, pending_id: str, entry: dict[str, Any], seq: int, notices: Sequence[OutboxItem]
    ) -> bool:
        """Append ``entry`` as entry ``seq`` of the pending request's chain, and add
        ``notices`` to the outbox, in one write; ``False``, with neither written, when the
        request is not pending or the chain is not ``seq`` long."""

    @abstractmethod
    async def append_history_after(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` as entry ``seq`` of the request's chain, open or settled;
        ``False``, with nothing written, when the chain is not ``seq`` long."""

    @abstractmethod
    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first."""

"""What a store's history offers, beside the store's records.

:class:`HistoryLog` is what a durable store offers, and :class:`GuardedHistory` the append
that writes only while the history is as its writer read it (:class:`NoticedHistory`, that
append with the outbox items it owes people, in one write; :class:`AfterSettleHistory`, that
append on a settled request too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from roomkit.models.pending_input import PendingInput
from roomkit.stores.outbox import OutboxItem

__all__ = ["AfterSettleHistory", "GuardedHistory", "HistoryLog", "NoticedHistory"]


@runtime_checkable
class HistoryLog(Protocol):
    """A store that keeps each request's history beside it."""

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` (checked by :func:`~roomkit.stores.check_entry`) to the
        request's history; return its ``seq``."""
        ...

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first (empty for an id with none)."""
        ...

    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any] | None = None
    ) -> PendingInput | None:
        """Add ``actors`` to the approvers of the pending request, and append ``entry``
        (when given) to its history in the same write; the record once changed, ``None``
        when the request is not pending."""
        ...


@runtime_checkable
class GuardedHistory(Protocol):
    """A store that appends to a history only while it is as its writer read it: the
    check-and-set a write decided from the history needs (a routing assignment), so that
    two processes deciding the same from the same history write it once."""

    async def append_history_at(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` (checked by :func:`~roomkit.stores.check_entry`) as entry ``seq`` of the
        pending request's history, in one write that checks both; ``False``, having written
        nothing, when the request is not pending or its history is no longer ``seq``
        entries long (another entry, or the settle's, came first: read it again)."""
        ...


@runtime_checkable
class AfterSettleHistory(Protocol):
    """A store that appends to a history while it is as its writer read it, whether the
    request is open or settled: an entry owed once after the settle (a ladder's default)."""

    async def append_history_after(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` (checked by :func:`~roomkit.stores.check_entry`) as entry ``seq`` of the
        request's history, open or settled, in one write that checks it; ``False``, having
        written nothing, when the history is no longer ``seq`` entries long."""
        ...


@runtime_checkable
class NoticedHistory(Protocol):
    """A guarded history whose store keeps the notification outbox too, and adds to it in
    the append's own write: an entry that owes someone a notice (a reassignment) and the
    notice land together or not at all, so that no process dies between the two."""

    async def append_history_noticed(
        self, pending_id: str, entry: dict[str, Any], seq: int, notices: Sequence[OutboxItem]
    ) -> bool:
        """As :meth:`GuardedHistory.append_history_at`, adding ``notices`` to the store's
        outbox in the same write (those whose ids it holds already are left as they are);
        ``False``, having written neither, when the append is refused."""
        ...

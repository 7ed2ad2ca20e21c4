"""The default store: requests and a bounded retention of outcomes in this process's memory."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection
from typing import Any

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import creation_order
from roomkit.stores.base import check_settled_listing

__all__ = ["MemoryStore"]

_PENDING = PendingInputStatus.PENDING


class MemoryStore:
    """Active requests in a dict; the last ``retention`` outcomes replayable.

    The retention fills when an outcome is recorded, not when someone reads it, and evicts
    the oldest first. ``retention=0`` switches replay off: a settle still hands its outcome
    to the waits in this process, and nothing is replayable after.

    A request's history (``handler.history(id)``) stays as long as the store knows the
    request: while it is open, and then while its outcome is retained, so memory follows
    the retention however many requests come and go.

    Args:
        retention: how many settled outcomes stay replayable (the newest).
        audit_retention: how many settled requests keep their history readable (the most
            recently settled); ``None`` (the default) keeps those of the retained outcomes.
            At least ``retention``: a larger count keeps the histories of that many requests
            once their outcomes no longer replay. An open request's history always stays.

    Raises:
        TypeError, ValueError: ``retention`` is not an int ``>= 0``, or ``audit_retention``
            is not ``None`` or an int ``>= retention``.
    """

    __slots__ = (
        "_active",
        "_kept",
        "_kept_order",
        "_keys",
        "_order",
        "_retained",
        "_spare",
        "audit_retention",
        "get",
        "get_settled",
        "retention",
    )

    def __init__(self, *, retention: int = 128, audit_retention: int | None = None) -> None:
        if isinstance(retention, bool) or not isinstance(retention, int):
            raise TypeError(f"retention must be an int, got {type(retention).__name__}")
        if retention < 0:
            raise ValueError(f"retention must be >= 0 (0 switches replay off), got {retention}")
        if audit_retention is None:
            audit_retention = retention
        elif isinstance(audit_retention, bool) or not isinstance(audit_retention, int):
            raise TypeError(
                "audit_retention is a count of settled requests whose history stays, "
                f"got {type(audit_retention).__name__}"
            )
        elif audit_retention < retention:
            raise ValueError(
                f"audit_retention ({audit_retention}) must be at least retention ({retention}):"
                " a replayable outcome keeps its history"
            )
        self.retention = retention
        self.audit_retention = audit_retention
        self._active: dict[str, PendingInput] = {}
        self._retained: dict[str, PendingInput] = {}
        # Eviction order, kept apart: finding a dict's first key walks past the slots its
        # deleted keys left behind, a deque's popleft does not.
        self._order: deque[str] = deque()
        self._keys: dict[str, str] = {}
        # Requests past the retention kept for their history only, oldest first: at most
        # ``_spare`` of them (``audit_retention - retention``).
        self._spare = audit_retention - retention
        self._kept: dict[str, PendingInput] = {}
        self._kept_order: deque[str] = deque()
        # The reads of every wait and replay are the dicts' own, with no call of ours in
        # between. They are set through the slots, so that a subclass's own get() wins.
        _GET.__set__(self, self._active.get)
        _GET_SETTLED.__set__(self, self._retained.get)

    get: Callable[[str], PendingInput | None]
    """The active request with this id, settled or not, or ``None``."""
    get_settled: Callable[[str], PendingInput | None]
    """The retained outcome of a request no longer active, or ``None``."""

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
                if (evicted.key is not None or self._spare) and (
                    evicted.pending_id not in self._active
                ):
                    self._leave(evicted)
        return request

    def retire(self, request: PendingInput) -> None:
        if (
            self._active.pop(request.pending_id, None) is not None
            and (request.key is not None or self._spare)
            and request.pending_id not in self._retained
        ):
            self._leave(request)

    def parts(self) -> tuple[dict[str, PendingInput], dict[str, PendingInput], deque[str]]:
        """What an engine that takes this store's steps itself works on, without a call:
        the active requests by id, the retained outcomes by id, and the retained ids,
        oldest first. It takes them as :meth:`add`, :meth:`settle` and :meth:`retire` do,
        and calls :meth:`forget` for a request with a key it evicts."""
        return self._active, self._retained, self._order

    def forget(self, request: PendingInput) -> None:
        """``request`` left the retention and is no longer active (see :meth:`parts`)."""
        self._leave(request)

    def _leave(self, request: PendingInput) -> None:
        """``request`` is neither active nor retained any more: forget its key, and keep it
        for its history while the audit retention has room."""
        self._forget_key(request)
        if self._spare:
            self._kept[request.pending_id] = request
            order = self._kept_order
            order.append(request.pending_id)
            if len(order) > self._spare:
                del self._kept[order.popleft()]

    def recall(self, pending_id: str) -> PendingInput | None:
        """The request with this id while the store keeps its history (open, retained, or
        among the ``audit_retention`` settled), or ``None``."""
        return (
            self._active.get(pending_id)
            or self._retained.get(pending_id)
            or self._kept.get(pending_id)
        )

    def remembered(self) -> list[PendingInput]:
        """Every request whose history the store keeps (open, retained, or among the
        ``audit_retention`` settled), each once."""
        return list({**self._kept, **self._retained, **self._active}.values())

    def holds(self, pending_id: str) -> bool:
        """Whether the store keeps the history of the request with this id."""
        return self.recall(pending_id) is not None

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

        Arguments as :meth:`~roomkit.stores.base.SettledHistory.list_settled`.
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


_GET: Any = MemoryStore.__dict__["get"]
_GET_SETTLED: Any = MemoryStore.__dict__["get_settled"]

"""An answer that commits in the application's own database transaction.

``aresolve(..., connection=conn)`` settles through the same steps as every other answer
(the answer schema checked; on an approval, the decision read, an edit checked against the
tool's schema, its ``decided`` and ``settled`` entries written with the outcome), and only
the last one, the check-and-set, changes: :func:`in_transaction` hands it to a store that
can run it inside the caller's open transaction (:meth:`PostgresStore.settle_in
<roomkit.stores.postgres.PostgresStore.settle_in>`), so that the
application's write and the answer commit or roll back together. Every other store refuses
``connection=`` with a :class:`TypeError` that says so, and so does a quorum approval, whose
votes are the store's own operations.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.base import SettleOutcome

if TYPE_CHECKING:
    from roomkit.stores.grants import Grant

__all__ = ["Settle", "Settlement", "answered", "given", "in_transaction"]

_RESOLVED = PendingInputStatus.RESOLVED


@dataclass(frozen=True, slots=True)
class Settlement:
    """What one check-and-set asks for: the request, its outcome, who gives it, and the
    history entries that join the request's history when it wins."""

    pending_id: str
    status: PendingInputStatus
    """``RESOLVED`` or ``REJECTED``."""
    text: str
    """The answer of a ``RESOLVED`` outcome, the reason of a ``REJECTED`` one."""
    by: str | None
    """Who settles it (``None``: the application)."""
    history: tuple[dict[str, Any], ...]
    grant: Grant | None = None
    """The standing grant the approval makes, recorded in the settle's own transaction on
    a store that can (:class:`~roomkit.stores.grants.SettlesGranting`)."""

    @property
    def outcome(self) -> SettleOutcome:
        """The outcome keywords of the store's settle."""
        return given(self.status, self.text, self.by)

    def made(self, request: PendingInput) -> PendingInput:
        """``request`` (made and not stored yet) as this settle leaves it: what a store that
        inserts it settled (:class:`~roomkit.stores.base.InsertsSettled`) is handed."""
        if self.status is _RESOLVED:
            return replace(request, status=self.status, result=self.text, settled_by=self.by)
        return replace(request, status=self.status, reject_reason=self.text, settled_by=self.by)


Settle = Callable[[Settlement], Awaitable[bool]]
"""A check-and-set: ``await settle(settlement)``, ``True`` if it won."""


def in_transaction(store: object | None, request: PendingInput | None, connection: Any) -> Settle:
    """The check-and-set of ``store`` inside the transaction open on ``connection``.

    It returns ``True`` when the outcome is recorded if that transaction commits; its
    history entries commit with it. The request the answer is for is ``request`` (``None``:
    unknown here, which the check-and-set finds out).

    Raises:
        TypeError: ``store`` (``None`` for the memory store) cannot settle inside a
            caller's transaction, or ``request`` is a quorum approval.
    """
    settle_in = getattr(store, "settle_in", None)
    if settle_in is None:
        raise TypeError(
            f"connection= settles inside your own database transaction, which only "
            f"PostgresStore offers; this handler's store is a "
            f"{'MemoryStore' if store is None else type(store).__name__}: call aresolve() "
            f"without connection="
        )
    if request is not None and request.quorum is not None:
        raise TypeError(
            f"request {request.pending_id} is a quorum approval: each vote is the store's "
            f"own operation and cannot join your transaction; call aresolve() without "
            f"connection="
        )

    async def settle(settlement: Settlement) -> bool:
        won = await settle_in(
            connection,
            settlement.pending_id,
            settlement.status,
            history=settlement.history,
            **settlement.outcome,
        )
        return won is not None

    return settle


def given(status: PendingInputStatus, text: str, by: str | None) -> SettleOutcome:
    """The outcome keywords of a settle to ``status`` by ``by``: ``text`` is the answer of a
    ``RESOLVED`` outcome, the reason of any other."""
    if status is _RESOLVED:
        return SettleOutcome(result=text, settled_by=by)
    return SettleOutcome(reason=text, settled_by=by)


def answered(record: PendingInput | None, result: str, by: str | None) -> bool:
    """Whether ``record`` holds ``by``'s own answer ``result``: the outcome an answer asks for."""
    return (
        by is not None
        and record is not None
        and record.status is _RESOLVED
        and record.settled_by == by
        and record.result == result
    )

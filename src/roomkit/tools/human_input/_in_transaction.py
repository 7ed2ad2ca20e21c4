"""An answer that commits in the application's own database transaction.

``aresolve(..., connection=conn)`` hands the settle to a store that can run it inside the
caller's open transaction (:meth:`PostgresStore.settle_in
<roomkit.tools.human_input.stores.postgres.PostgresStore.settle_in>`): the application's
write and the answer commit or roll back together. Every other store refuses
``connection=`` with a :class:`TypeError` that says so.
"""

from __future__ import annotations

from typing import Any

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input._checks import check_answer
from roomkit.tools.human_input.stores import settled_entry

__all__ = ["answered", "resolve_in"]

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED


async def resolve_in(
    store: object | None,
    pending_id: str,
    result: str,
    by: str | None,
    surface: str | None,
    connection: Any,
) -> bool:
    """Answer the request inside the transaction open on ``connection``.

    ``True`` means the answer is recorded if that transaction commits (or was recorded
    before by this same ``by`` with this same ``result``); its ``settled`` entry (``by``
    through ``surface``) commits with it.

    Raises:
        TypeError: ``store`` (``None`` for the memory store) cannot settle inside a
            caller's transaction, ``connection`` is not a connection it takes, or the
            request is a quorum approval (its votes are the store's own operations).
        InvalidAnswerError: the answer does not match the request's answer schema.
    """
    settle_in = getattr(store, "settle_in", None)
    fetch = getattr(store, "fetch", None)
    if settle_in is None or fetch is None:
        raise TypeError(
            f"connection= settles inside your own database transaction, which only "
            f"PostgresStore offers; this handler's store is a "
            f"{'MemoryStore' if store is None else type(store).__name__}: call aresolve() "
            f"without connection="
        )
    request: PendingInput | None = await fetch(pending_id)
    if request is not None and request.quorum is not None:
        raise TypeError(
            f"request {pending_id} is a quorum approval: each vote is the store's own "
            f"operation and cannot join your transaction; call aresolve() without connection="
        )
    if request is None or request.status is not _PENDING:
        return answered(request, result, by)
    if request.answer_schema is not None:
        check_answer(request, result)
    entry = settled_entry(_RESOLVED.value, actor=by, surface=surface)
    won = await settle_in(
        connection, pending_id, _RESOLVED, result=result, settled_by=by, history=(entry,)
    )
    return won is not None


def answered(record: PendingInput | None, result: str, by: str | None) -> bool:
    """Whether ``record`` holds ``by``'s own answer ``result``: the outcome an answer asks for."""
    return (
        by is not None
        and record is not None
        and record.status is _RESOLVED
        and record.settled_by == by
        and record.result == result
    )

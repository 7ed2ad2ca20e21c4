"""How a handler gives requests up, and what a request nobody answered records.

The reasons a withdrawal gives (released, handler closed) and the histories that a timeout
and a withdrawal write are the same on every store; the memory engine takes the reasons
from here too. On a durable store a release and a close are settles in the store, whose
winners are handed to this process's waits (:class:`~roomkit.tools.human_input._durable.
DurableWaits`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from roomkit.core.exceptions import HandlerClosedError, StoreError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores import settled_entry

if TYPE_CHECKING:
    from roomkit.tools.human_input._durable import DurableWaits

__all__ = [
    "HANDLER_CLOSED",
    "RELEASED",
    "handler_closed",
    "release",
    "timed_out",
    "withdraw_created",
    "withdrawn",
]

logger = logging.getLogger("roomkit.tools.human_input")

_REJECTED = PendingInputStatus.REJECTED

RELEASED = "Released before an answer arrived"
HANDLER_CLOSED = "Human input handler closed"


def handler_closed() -> HandlerClosedError:
    """What a wait that the handler's (or its channel's) close ends raises."""
    return HandlerClosedError(HANDLER_CLOSED)


def timed_out() -> tuple[dict[str, Any], ...]:
    """The history a timeout records: its ``settled`` entry (no one settled it)."""
    return (settled_entry(PendingInputStatus.TIMED_OUT.value),)


def withdrawn(reason: str | None = None) -> tuple[dict[str, Any], ...]:
    """The history a withdrawal records (the handler gave the request up; ``reason`` says
    why, when the caller said)."""
    return (settled_entry(_REJECTED.value, withdrawn=True, reason=reason),)


async def release(waits: DurableWaits, pending_id: str, reason: str | None = None) -> bool:
    """Withdraw the request in ``waits``' store if still unanswered, saying ``reason`` (by
    default :data:`RELEASED`), and forget it here; ``True`` if this call withdrew it.

    The withdrawal is the store's check-and-set: of releases racing from any processes,
    one wins, and a request unknown or settled already (an answer, a timeout, an earlier
    release) gives ``False``.
    """
    won = await waits.store.settle(
        pending_id,
        _REJECTED,
        reason=RELEASED if reason is None else reason,
        withdrawn=True,
        history=withdrawn(reason),
    )
    if won is not None:
        waits.settled(won)
    waits.mine.drop(pending_id)
    return won is not None


async def withdraw_created(waits: DurableWaits, channel_id: str | None) -> None:
    """Withdraw the unkeyed requests created here (for ``channel_id``, or all); keyed ones
    stay open in the store for whoever re-attaches to them. A store error is logged."""
    for request in list(waits.local.values()):
        if channel_id is not None and request.channel_id != channel_id:
            continue
        waits.mine.close(request.pending_id)
        if request.key is not None:
            continue
        try:
            won = await waits.store.settle(
                request.pending_id,
                _REJECTED,
                reason=HANDLER_CLOSED,
                withdrawn=True,
                history=withdrawn(),
            )
        except StoreError:
            logger.exception("Could not withdraw pending %s on close", request.pending_id)
            continue
        if won is not None:
            waits.settled(won)

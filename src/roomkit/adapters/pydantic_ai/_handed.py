"""A settled request's decision, handed to one run only.

A request is keyed by the run id and the call id, so that a run retried under its own
``run_id`` re-attaches to the requests it opened. A caller may pass ``run_id`` itself, and
a model may repeat its call ids (Pydantic AI's ``TestModel``, a ``FunctionModel``): another
run under the same ``run_id`` would then meet a request that an earlier run already took
its decision from, and take it again, with nobody asked. So each request whose decision a
run takes is marked in its history, a ``saved`` entry holding ``handed`` (which lives as long
as the request, and so as long as its key re-attaches to it), and a run that meets a request
handed already refuses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roomkit.core.exceptions import KeyConflictError, UnknownRequestError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.shown import shown
from roomkit.stores import new_entry

if TYPE_CHECKING:
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["check_unhanded", "hand", "take"]

_SURFACE = "pydantic-ai"
"""The surface of the marks: the adapter's channel."""


def _marked(history: list[dict[str, Any]] | None) -> bool:
    """Whether ``history`` holds the mark that a run took the request's decision."""
    return history is not None and any(
        entry.get("type") == "saved" and entry.get("handed") for entry in history
    )


async def _history(handler: HumanInputHandler, pending_id: str) -> list[dict[str, Any]] | None:
    """The history of the request ``pending_id``; ``None`` once the store keeps none (the
    memory store's, past its retention): it no longer keeps the request either, so no key
    re-attaches to it, and there is nothing to mark."""
    try:
        return await handler.history(pending_id)
    except UnknownRequestError:
        return None


async def check_unhanded(handler: HumanInputHandler, request: PendingInput, run: str) -> None:
    """Raise if a run took the decision of ``request`` already (an open one has none to take).

    Raises:
        KeyConflictError: it did.
    """
    if request.status is PendingInputStatus.PENDING:
        return
    if _marked(await _history(handler, request.pending_id)):
        raise _handed(request, run)


async def take(handler: HumanInputHandler, request: PendingInput, run: str) -> None:
    """Mark the decision of the settled ``request`` taken by the run ``run``: once, whatever
    runs take it at the same moment.

    Raises:
        KeyConflictError: another run took it.
    """
    entry = new_entry("saved", surface=_SURFACE, run=run, handed=True)
    while True:
        history = await _history(handler, request.pending_id)
        if _marked(history):
            raise _handed(request, run)
        try:
            if history is None or await handler.record_at(
                request.pending_id, entry, seq=len(history), open_only=False
            ):
                return
        except UnknownRequestError:
            return  # let go meanwhile


async def hand(handler: HumanInputHandler, pending_ids: list[str]) -> None:
    """Mark the decisions of ``pending_ids`` taken by the run a resume continues (a resume
    taken over from one that died marks them again: its claim is the same)."""
    entry = new_entry("saved", surface=_SURFACE, handed=True)
    for pending_id in pending_ids:
        history = await _history(handler, pending_id)
        if history is not None and not _marked(history):
            try:
                await handler.record(pending_id, entry)
            except UnknownRequestError:
                continue  # let go meanwhile


def _handed(request: PendingInput, run: str) -> KeyConflictError:
    return KeyConflictError(
        f"request {request.pending_id} of {shown(request.tool_name)} was decided for an "
        f"earlier run under run_id {shown(run)}, which took its decision: a run_id names "
        "one run, and a decision stands for the call it was asked about only; run this "
        "one under a run_id of its own (or leave run_id to Pydantic AI)",
        request,
    )

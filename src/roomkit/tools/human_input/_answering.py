"""``aresolve``'s path: how an answer reaches the settle with as few reads as it can.

A request held here (created by this handler) tells its kind and answer schema without a
read. One read here lately tells them too: they never change, so the copy checks the
answer, and the settle's check-and-set decides whether the request is still open. One
known nowhere here goes, on a store that can (:class:`~roomkit.tools.human_input.stores.
base.PlainSettle`), straight to a settle that leaves alone a request whose answer needs a
check (an answer schema, an approval) and hands it back as it stands; otherwise it is read
first. Whichever way, an answer is checked against its request before anything is written,
and an approval's answer is a decision (:mod:`roomkit.tools.human_input._decisions`).
"""

from __future__ import annotations

from typing import Any

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input._checks import check_answer, fits
from roomkit.tools.human_input._decisions import APPROVAL, Decisions, trail
from roomkit.tools.human_input._durable_engine import DurableEngine
from roomkit.tools.human_input._in_transaction import Settle, answered, in_transaction
from roomkit.tools.human_input._memory_engine import MemoryEngine

__all__ = ["answer"]

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED


async def answer(
    engine: MemoryEngine | DurableEngine,
    decisions: Decisions,
    pending_id: str,
    result: str,
    by: str | None,
    surface: str | None,
    connection: Any,
    shown: str | None = None,
) -> bool:
    """Answer the request (``aresolve``, its arguments checked); ``True`` if this call won.

    ``shown`` is the digest of the arguments the person was shown, checked on an approval.
    """
    request = engine.local(pending_id)
    history = trail(_RESOLVED, by, surface)
    if request is None and connection is None:
        seen = engine.seen(pending_id)
        if seen is None or (seen.kind != APPROVAL and seen.answer_schema is None):
            plain = await engine.resolve_plain(pending_id, result, by, history)
            if plain is not None:
                won, request = plain
                return won or await _answer(
                    engine, decisions, request, result, by, surface, engine.settle, history, shown
                )
        elif seen.kind != APPROVAL and fits(seen, result):
            if await engine.settle(pending_id, _RESOLVED, result, by, history):
                return True
            return by is not None and answered(await engine.get_request(pending_id), result, by)
    if request is None:
        request = await engine.get_request(pending_id)
    settle: Settle = engine.settle
    if connection is not None:
        store = getattr(engine, "store", None)  # None: the memory store
        settle = in_transaction(store, request, connection)
    return await _answer(engine, decisions, request, result, by, surface, settle, history, shown)


async def _answer(
    engine: MemoryEngine | DurableEngine,
    decisions: Decisions,
    request: PendingInput | None,
    result: str,
    by: str | None,
    surface: str | None,
    settle: Settle,
    history: tuple[dict[str, Any], ...],
    shown: str | None,
) -> bool:
    """Answer ``request`` as it was read (``None``: not stored) through ``settle``, which
    records ``history`` when it wins."""
    if request is not None and request.kind == APPROVAL:
        return await decisions.decide(request, result, by, surface, settle, shown)
    if request is None or request.status is not _PENDING:
        return answered(request, result, by)
    if request.answer_schema is not None:
        check_answer(request, result)
    pending_id = request.pending_id
    if await settle(pending_id, _RESOLVED, result, by, history):
        return True
    return by is not None and answered(await engine.get_request(pending_id), result, by)

"""What one answer of an A2A follow-up does: settle the request it names, as the caller.

A follow-up's data part ``{"pending_id", "answer"}`` names its request; plain text answers
the one open request its task showed (:mod:`roomkit.adapters.a2a._shown`). Each answer is
checked here (the request is open in the room, the caller may see and decide it) and
settled with one ``aresolve``; what was wrong comes back as :class:`Refused` text, an answer
that came after another one as the request that settled first (:func:`first_note` says
which answer stands).
"""

from __future__ import annotations

import json
from typing import Any

from roomkit.adapters._answer_shapes import response_schema
from roomkit.auth.access import Access
from roomkit.auth.principal import Principal
from roomkit.core.exceptions import RoomKitError
from roomkit.models.kinds import Kind, request_kind
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.shown import shown
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.validation import validate_answer

__all__ = ["MISSING", "Refused", "answer_problem", "as_text", "first_note", "settle"]


class Refused(str):
    """What was wrong with a part of a follow-up that answered nothing."""

    __slots__ = ()


MISSING = object()
"""The answer of a data part that holds none."""


async def settle(
    handler: HumanInputHandler,
    access: Access,
    principal: Principal,
    room_id: str,
    pending_id: Any,
    answer: Any,
) -> PendingInput | Refused | None:
    """Answer ``pending_id`` as ``principal``: ``None`` when the answer was taken, the
    request when it was settled otherwise first, what was wrong when nothing was done."""
    if not isinstance(pending_id, str):
        return Refused("No open request: pending_id is text")
    if answer is MISSING:
        return Refused('The data part holds no "answer": send {"pending_id": ..., "answer": ...}')
    request = await handler.get_request(pending_id)
    if (
        request is None
        or request.room_id != room_id
        or not await access.can_see(principal, request)
    ):
        return Refused(f"No open request {shown(pending_id)} of yours here")
    if request.status is not PendingInputStatus.PENDING:
        return request
    if not await access.may_decide(principal, request):
        return Refused(f"Only the approval's approvers may decide {request.pending_id}")
    problem = answer_problem(request, answer)
    if problem is not None:
        return Refused(f"Request {request.pending_id} cannot take that answer: {problem}")
    try:
        won = await handler.aresolve(
            pending_id,
            as_text(answer),
            by=principal.actor_id,
            surface="a2a",
            digest=request.arguments_digest,
        )
    except RoomKitError as error:
        return Refused(f"The answer was refused: {error}")
    return None if won else await handler.get_request(pending_id)


def answer_problem(request: PendingInput, answer: Any) -> str | None:
    """What makes ``answer`` no answer to ``request`` as the desk takes one (one of a
    question's options, text that is not blank), or ``None``. An approval's decision and
    an answer to a request with an answer schema are checked when they are settled."""
    if request.kind == "approval" or request.answer_schema is not None:
        return None
    # A question's answer, or a custom request's text, is the desk's body's ``answer``;
    # a confirmation's or a question set's is the body itself.
    wrapped = request_kind(request) in (Kind.QUESTION, Kind.CUSTOM)
    body = {"answer": _whole(answer)} if wrapped else _whole(answer)
    problem = validate_answer(response_schema(request), body)
    if problem is None:
        return None
    return f"{problem} ({_wanted(request)})"


def _wanted(request: PendingInput) -> str:
    """What a request of that kind takes, worded for the caller."""
    kind = request_kind(request)
    if kind is Kind.CONFIRM:
        return 'send {"confirmed": true|false, "reason": "..."}'
    if kind is Kind.QUESTIONS:
        return 'send {"answers": [{"question": ..., "answer": ...}, ...]}, one per question'
    labels = response_schema(request)["properties"]["answer"]
    if "enum" in labels or "items" in labels:
        return "send one of the question's options, or a list of them when it takes several"
    return "send the answer as text"


def as_text(answer: Any) -> str:
    """An answer as it is recorded: text as is, anything else as compact JSON."""
    answer = _whole(answer)
    return answer if isinstance(answer, str) else json.dumps(answer, separators=(",", ":"))


def first_note(request: PendingInput, caller: Principal, answer: str) -> str | None:
    """What tells the caller their answer came after another settled ``request``; ``None``
    for their own answer sent again."""
    if request.status is PendingInputStatus.RESOLVED:
        if request.settled_by == caller.actor_id and request.result == answer:
            return None
        by = f" by {request.settled_by}" if request.settled_by else ""
        return f"Request {request.pending_id} was answered first{by}: {request.result}"
    if request.status is PendingInputStatus.REJECTED and not request.withdrawn:
        by = f" by {request.settled_by}" if request.settled_by else ""
        reason = f": {request.reject_reason}" if request.reject_reason else ""
        return f"Request {request.pending_id} was refused first{by}{reason}"
    return None


def _whole(value: Any) -> Any:
    """``value`` with its whole numbers as integers: a data part carries every number as a
    double, and an answer schema asking for an integer refuses ``3.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {key: _whole(item) for key, item in value.items()}
    return value

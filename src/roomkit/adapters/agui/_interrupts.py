"""Requests as AG-UI interrupts, and resume entries as the settles they ask for.

An open request of a thread is one :class:`~ag_ui.core.Interrupt`: its id is the pending id,
its ``responseSchema`` the shape a resume's ``payload`` takes (the desk's answer body for the
request's kind, the answer schema itself for a request that has one, ``{approved,
editedArgs, reason}`` for an approval), and ``expiresAt`` its deadline, which every roomkit
request has. :func:`settle_of` reads a resume entry against its request and says what to do,
or raises :class:`RunRefused` with the code the run ends with.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from ag_ui.core import Interrupt, ResumeEntry

from roomkit.adapters._answer_shapes import response_schema
from roomkit.models.kinds import Kind, request_kind
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.shown import shown
from roomkit.tools import approvals
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.validation import (
    unencodable_text,
    validate_answer,
    validate_tool_arguments,
)

__all__ = ["RunRefused", "Settle", "interrupt_of", "named", "response_schema", "settle_of"]

_REASONS = {Kind.APPROVAL: "tool_call", Kind.CONFIRM: "confirmation"}
_APPROVAL_FIELDS = {"approved", "editedArgs", "reason"}


class RunRefused(Exception):
    """A run the endpoint refuses (a resume it cannot take, too many new messages, one
    without text, a thread not the caller's): it ends with ``RUN_ERROR`` carrying
    :attr:`code`, having settled and started nothing."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        """The ``RUN_ERROR`` code: ``unknown_interrupt``, ``invalid_payload``,
        ``uncovered_approval``, ``duplicate_interrupt``, ``already_settled``,
        ``too_many_messages``, ``empty_message`` or ``unknown_thread``."""


def named(interrupt_id: str) -> str:
    """An interrupt id a client sent, as an error message quotes it: cut short, since the
    client chose it, with a newline and text UTF-8 cannot encode (a lone surrogate) escaped,
    since the message goes out in the stream and into logs."""
    return shown(interrupt_id)


@dataclass(frozen=True, slots=True)
class Settle:
    """What a resume entry does to its request."""

    request: PendingInput
    """The request, as read before anything was settled."""
    action: Literal["resolve", "reject", "withdraw"]
    """Answer it (an approval's decision included), reject it, or withdraw a question."""
    text: str = ""
    """The answer (or decision) text, or the rejection's reason."""


def _answer_text(request: PendingInput, payload: Any) -> str:
    """The answer as the model reads it, as the desk records the same answer."""
    if request.answer_schema is not None:
        return payload if isinstance(payload, str) else _compact(payload)
    kind = request_kind(request)
    if kind is Kind.CONFIRM:
        return _compact({key: value for key, value in payload.items() if value != ""})
    if kind is Kind.QUESTIONS:
        return _compact({"answers": payload["answers"]})
    answer = payload["answer"]
    return answer if isinstance(answer, str) else _compact({"answer": answer})


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _message(request: PendingInput, kind: Kind) -> str:
    arguments = request.arguments
    if kind is Kind.APPROVAL:
        shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        return f"Allow {request.tool_name}({shown})?"
    for field in ("question", "action"):
        text = arguments.get(field)
        if isinstance(text, str) and text:
            return text
    if kind is Kind.QUESTIONS:
        # Only a set of questions is sure to hold objects: a custom tool's "questions"
        # is whatever the model wrote.
        return "\n".join(item["question"] for item in arguments["questions"])
    return f"{request.tool_name}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"


def expires_at(handler: HumanInputHandler, request: PendingInput) -> str | None:
    """The request's deadline as ISO 8601 UTC, or ``None`` while no wait has set one."""
    left = handler.time_left(request)
    if left is None:
        return None
    moment = datetime.fromtimestamp(time.time() + left, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def interrupt_of(handler: HumanInputHandler, request: PendingInput) -> Interrupt:
    """``request`` as the interrupt a run ends with."""
    kind = request_kind(request)
    roomkit: dict[str, Any] = {"kind": str(kind), "approvers": list(request.approvers)}
    if request.arguments_digest is not None:
        roomkit["digest"] = request.arguments_digest
    return Interrupt(
        id=request.pending_id,
        reason=_REASONS.get(kind, "input_required"),
        message=_message(request, kind),
        tool_call_id=request.tool_call_id or request.pending_id,
        response_schema=response_schema(request),
        expires_at=expires_at(handler, request),
        metadata={"roomkit": roomkit},
    )


def settle_of(request: PendingInput, entry: ResumeEntry) -> Settle:
    """What ``entry`` asks of ``request``.

    Raises:
        RunRefused: the payload does not fit the request (``invalid_payload``).
    """
    is_approval = request.kind == "approval"
    payload = entry.payload
    # Checked with the rest, before anything of the resume is settled: text no store takes
    # would fail its settle half way through the resume.
    unstorable = unencodable_text(payload)
    if unstorable is not None:
        raise _invalid(request, f"the payload holds {unstorable}, which UTF-8 cannot encode")
    if entry.status == "cancelled":
        reason = payload.get("reason") if isinstance(payload, dict) else None
        text = reason if isinstance(reason, str) else ""
        return Settle(request, "reject" if is_approval else "withdraw", text)
    if is_approval:
        return Settle(request, "resolve", _decision(request, payload))
    problem = validate_answer(response_schema(request), payload)
    if problem is not None:
        raise _invalid(request, f"the payload does not fit its responseSchema: {problem}")
    return Settle(request, "resolve", _answer_text(request, payload))


def _decision(request: PendingInput, payload: Any) -> str:
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise _invalid(request, 'an approval takes {"approved": true|false}')
    extra = set(payload) - _APPROVAL_FIELDS
    if extra:
        raise _invalid(request, f"an approval takes approved, editedArgs and reason, not {extra}")
    edited = payload.get("editedArgs")
    reason = payload.get("reason", "")
    if not isinstance(reason, str):
        raise _invalid(request, "reason must be text")
    if not payload["approved"]:
        return approvals.reject(reason)
    if edited is None or edited == request.arguments:
        return approvals.approve()
    if not isinstance(edited, dict):
        raise _invalid(request, "editedArgs must be an object: every argument")
    # Checked here, before anything of the resume is settled, as the settle checks it.
    problem = validate_tool_arguments(request.answer_schema or {}, edited)
    if problem is not None:
        raise _invalid(request, f"editedArgs do not fit the tool's arguments: {problem}")
    return approvals.edit(edited)


def _invalid(request: PendingInput, problem: str) -> RunRefused:
    return RunRefused("invalid_payload", f"Interrupt {request.pending_id}: {problem}")


def is_replay(settle: Settle, now: PendingInput) -> bool:
    """Whether ``now`` (the request after a settle was refused) already holds what
    ``settle`` asked for."""
    if settle.action == "withdraw":
        return now.withdrawn
    if settle.action == "reject":
        return now.status is PendingInputStatus.REJECTED and not now.withdrawn
    if now.status is PendingInputStatus.RESOLVED:
        return now.result == settle.text
    if now.status is PendingInputStatus.REJECTED and settle.request.kind == "approval":
        decision = approvals.read_decision(settle.text)
        return decision.kind == "reject" and (now.reject_reason or "") == decision.text
    return False

"""The two shapes every adapter maps its framework onto: a :class:`Pause` (what a person is
asked about) and a :class:`Verdict` (what a settled request comes to), and the reading of a
settled request as a verdict.

The verdict of an expiry carries the text the model reads, naming how long the person had:
the caller measures it from the request's own deadline, which a durable run's resumer may
not share (it may pass other options than the run that asked).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools import texts
from roomkit.tools.approvals import read_decision
from roomkit.tools.human_input.ladder import Default
from roomkit.tools.validation import validate_answer

__all__ = [
    "Pause",
    "Verdict",
    "VerdictKind",
    "answered",
    "call_arguments",
    "parsed_answer",
    "question_arguments",
    "settled_verdict",
]

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_TIMED_OUT = PendingInputStatus.TIMED_OUT

VerdictKind = Literal[
    "approve", "edit", "reject", "respond", "expired", "answer", "defaulted", "refused"
]


@dataclass(frozen=True, slots=True)
class Pause:
    """One pause of a framework's run, as roomkit asks a person about it."""

    key: str
    """Stable per pause (the run or thread and the framework's own id of the pause)."""
    kind: Literal["approval", "question"]
    """An approval of a tool call, or a question."""
    tool_name: str
    """The held tool, or the name the question is shown under."""
    arguments: dict[str, Any]
    """The call's arguments, or the question's fields as the person reads them."""
    tool_call_id: str = ""
    """The framework's id of the tool call, when it has one (its request keeps a long one by
    its digest: :func:`~roomkit.adapters._keys.call_id_of`)."""
    tool_schema: dict[str, Any] | None = None
    """On an approval, the tool's JSON Schema, which an edit must match."""
    decisions: Sequence[str] | None = None
    """On an approval, the decisions the framework can carry (all four when ``None``)."""
    answer_schema: dict[str, Any] | None = None
    """On a question, the JSON Schema of the answer."""
    description: str | None = None
    """What the framework says about the call, kept in the approval's history."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a settled request comes to, before it is put in a framework's words."""

    kind: VerdictKind
    """``approve``, ``edit``, ``reject``, ``respond`` (approvals), ``answer`` (questions),
    ``expired`` (nobody answered in time), ``defaulted`` (a question nobody answered in time,
    answered by the ladder's default) or ``refused`` (a question rejected or given up)."""
    arguments: dict[str, Any] | None = None
    """On an edit, the person's replacement arguments (checked against the tool's schema)."""
    text: str = ""
    """A rejection's reason, a response, or what the model reads of an expiry, a refusal or
    a default (the default answer, marked as one)."""
    answer: Any = None
    """On a question, the answer (the person's or the ladder's default): JSON, parsed, when
    the question has an answer schema that takes more than text."""
    by: str | None = None
    """Who settled it, as the handler verified them (``None`` for an expiry)."""


def question_arguments(value: Any) -> dict[str, Any]:
    """A question's value as the fields a person reads: its text, or the value itself."""
    if isinstance(value, str):
        return {"question": value}
    if isinstance(value, dict) and all(isinstance(name, str) for name in value):
        return dict(value)
    return {"value": value}


def call_arguments(arguments: dict[str, Any], written: object) -> dict[str, Any]:
    """A model's call ``arguments`` as a person is shown them: as they are; or, when they
    hold a number JSON cannot carry (``NaN``, an infinity, which Python's and Pydantic's
    parsers read from a model's JSON), what the model wrote (``written``, its text or its
    object as JSON) as text under ``arguments``, as no request could keep the number."""
    if _finite(arguments):
        return arguments
    if isinstance(written, str):
        return {"arguments": written}
    try:
        return {"arguments": json.dumps(written, ensure_ascii=False)}
    except (TypeError, ValueError, RecursionError):
        return arguments  # no JSON at all: the request's own check says what is wrong


def _finite(value: object) -> bool:
    """Whether every number ``value`` holds, at any depth, is finite."""
    waiting, seen = [value], set[int]()
    while waiting:
        each = waiting.pop()
        if isinstance(each, float) and not math.isfinite(each):
            return False
        if isinstance(each, dict | list | tuple) and id(each) not in seen:
            seen.add(id(each))
            waiting.extend(each.values() if isinstance(each, dict) else each)
    return True


def settled_verdict(
    request: PendingInput,
    pause: Pause,
    *,
    waited: float,
    approve_on_expiry: bool,
    default: Default | None,
) -> Verdict | None:
    """What the settled ``request`` of ``pause`` comes to; ``None`` while it is open.

    Args:
        request: the request as it stands.
        pause: the pause it was asked about.
        waited: the seconds the person had, named in an expiry's text.
        approve_on_expiry: an approval nobody decided in time is approved (its rule's
            ``on_expiry="approve"``).
        default: the ladder's default answer of a question nobody answered in time.
    """
    status, by = request.status, request.settled_by
    if status is _PENDING:
        return None
    name = pause.tool_name
    if status is _TIMED_OUT:
        if pause.kind == "approval":
            if approve_on_expiry:
                return Verdict("approve")
            return Verdict("expired", text=texts.approval_expired(name, waited))
        if default is not None:
            text = texts.human_input_defaulted(name, waited, default.text)
            return Verdict("defaulted", answer=parsed_answer(pause, default.text), text=text)
        return Verdict("expired", text=texts.human_input_timed_out(name, waited))
    if status is not _RESOLVED:
        reason = request.reject_reason or ""
        if request.withdrawn or pause.kind == "question":
            return Verdict("refused", text=reason, by=by)
        return Verdict("reject", text=reason, by=by)
    return answered(pause, request.result or "", by)


def answered(pause: Pause, text: str, by: str | None) -> Verdict:
    """The verdict of a request of ``pause`` answered with ``text``."""
    if pause.kind == "question":
        return Verdict("answer", answer=parsed_answer(pause, text), by=by)
    decision = read_decision(text, recorded=True)
    return Verdict(decision.kind, arguments=decision.arguments, text=decision.text, by=by)


def parsed_answer(pause: Pause, text: str) -> Any:
    """A question's answer text as its framework receives it: the text itself when there is
    no answer schema or the schema takes it as text (as the desk checked it), else its JSON,
    parsed."""
    schema = pause.answer_schema
    if schema is None or validate_answer(schema, text) is None:
        return text
    return json.loads(text)

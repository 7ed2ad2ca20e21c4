"""The shape of an answer to a request, as the desk takes it, for the doors that take answers
as JSON (AG-UI's resume payloads, A2A's follow-ups).

:func:`response_schema` is the JSON Schema an answer body fits for the request's kind: one of
a question's option labels (several with ``multiSelect``), one answer per question of a set,
``{"confirmed", "reason"}`` for a confirmation, the answer schema itself for a request that
has one, ``{approved, editedArgs, reason}`` for an approval (AG-UI's). Free text holds at
least one character besides blanks, as on the desk.
"""

from __future__ import annotations

from typing import Any

from roomkit.models.kinds import Kind, option_labels, request_kind
from roomkit.models.pending_input import PendingInput

__all__ = ["response_schema"]

_TEXT = {"type": "string", "minLength": 1, "pattern": "\\S"}
_CONFIRM = {
    "type": "object",
    "properties": {"confirmed": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["confirmed"],
    "additionalProperties": False,
}


def _choice(question: dict[str, Any]) -> dict[str, Any]:
    """The schema of one question's answer: one of its labels, or several with
    ``multiSelect``; any text when it has no options."""
    labels = option_labels(question.get("options"))
    if not labels:
        return _TEXT
    label = {"type": "string", "enum": labels}
    if question.get("multiSelect") is True:
        return {"type": "array", "items": label, "minItems": 1, "uniqueItems": True}
    return label


def _body(**properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def response_schema(request: PendingInput) -> dict[str, Any]:
    """The JSON Schema of a resume ``payload`` for ``request``: the answer schema itself
    when the request has one, else the body its kind takes, as the desk takes it."""
    kind = request_kind(request)
    if kind is Kind.APPROVAL:
        edited = request.answer_schema if request.answer_schema else {"type": "object"}
        return {
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "editedArgs": edited,
                "reason": {"type": "string"},
            },
            "required": ["approved"],
            "additionalProperties": False,
        }
    if request.answer_schema is not None:
        return dict(request.answer_schema)
    if kind is Kind.CONFIRM:
        return _CONFIRM
    if kind is Kind.QUESTIONS:
        questions = request.arguments["questions"]
        answer = {"anyOf": [_choice(question) for question in questions]}
        item = _body(question={"type": "string"}, answer=answer)
        count = len(questions)
        return _body(answers={"type": "array", "items": item, "minItems": count, "maxItems": count})
    if kind is Kind.QUESTION:
        return _body(answer=_choice(request.arguments))
    return _body(answer=_TEXT)

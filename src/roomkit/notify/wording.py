"""How a notice reads in words, for every surface: what is asked, and how it ended.

Plain text only: each surface escapes or places it as its own format needs (Slack as
``plain_text``, email in HTML, ...). Nothing here depends on a surface's SDK.
"""

from __future__ import annotations

import json
import re
from typing import Any

from roomkit.models.kinds import Kind, kind_of, option_labels
from roomkit.models.pending_input import PendingInput
from roomkit.notify.surface import Notice

__all__ = [
    "STEERING",
    "arguments_words",
    "asked_text",
    "clip",
    "ended_words",
    "headline",
    "outcome_line",
    "request_kind",
    "shown",
]

STEERING = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What may change how the rest of a text reads: control characters (a line break and a tab
aside), and the bidi marks, embeddings, overrides and isolates. The desk's page keeps the same
class in ``static/dom.js``."""


def shown(text: str) -> str:
    """``text`` as a person is shown it: what steers its reading is a replacement character.

    ``Amount: <RLO>0001`` would read ``Amount: 1000``, and be approved as that. Every surface
    that shows a request's text passes it through here; the request itself, and the digest
    of its arguments, keep every character.
    """
    return STEERING.sub("\ufffd", text)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def request_kind(request: PendingInput) -> str:
    """``approval`` for an approval, else the question's shape (see ``roomkit.models.kinds``)."""
    if getattr(request, "kind", None) == "approval":
        return "approval"
    return str(kind_of(request.tool_name, request.arguments))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _words(name: str) -> str:
    """``arrival_date`` and ``arrivalDate`` read ``Arrival date``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"[_-]+", " ", name)).strip()
    return spaced[:1].upper() + spaced[1:].lower() if spaced else name


def _field(schema: Any, name: str) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    found = properties.get(name) if isinstance(properties, dict) else None
    return found if isinstance(found, dict) else {}


def _label(schema: dict[str, Any], name: str) -> str:
    title = schema.get("title")
    return title if isinstance(title, str) and title else _words(name)


def _scalar(value: Any, schema: dict[str, Any]) -> str:
    for choice in schema.get("oneOf") or schema.get("anyOf") or ():
        if isinstance(choice, dict) and choice.get("const") == value and "title" in choice:
            return str(choice["title"])
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        unit = schema.get("x-unit", schema.get("unit"))
        return f"{value:,}" + (f" {unit}" if isinstance(unit, str) and unit else "")
    return value if isinstance(value, str) else _json(value)


_LINE_BREAK = re.compile(r"[\n\u2028\u2029]")
"""What breaks a line once shown: the other line breaks Python knows are steering characters
(:data:`STEERING`), shown as replacement characters."""


def _text_lines(text: str) -> list[str]:
    """``text`` as lines, those after the first indented: a line break in a value (or a
    name) starts no line that reads as a field of its own (``Amount: 40`` in a note)."""
    first, *rest = _LINE_BREAK.split(text)
    return [first, *("  " + line for line in rest)]


def _value(value: Any, schema: dict[str, Any], depth: int) -> list[str]:
    """``value`` as lines (the first one follows its label), nested ones indented."""
    if depth > 4:
        return [_json(value)]
    if isinstance(value, dict):
        lines = [""]
        for line in _lines(value, schema, depth + 1):
            lines.append("  " + line)
        return lines if len(lines) > 1 else ["none"]
    if isinstance(value, list):
        found = schema.get("items")
        items: dict[str, Any] = found if isinstance(found, dict) else {}
        if all(not isinstance(item, dict | list) for item in value):
            return _text_lines(", ".join(_scalar(item, items) for item in value) or "none")
        lines = [""]
        for item in value:
            if isinstance(item, dict) and item:
                first, *rest = _lines(item, items, depth + 1)
            else:
                first, *rest = _value(item, items, depth + 1)
            lines.append("  - " + first)
            lines.extend("    " + line for line in rest)
        return lines
    return _text_lines(_scalar(value, schema))


def _lines(arguments: dict[str, Any], schema: Any, depth: int) -> list[str]:
    lines: list[str] = []
    for name, value in arguments.items():
        field = _field(schema, str(name))
        first, *rest = _value(value, field, depth)
        lines.extend(_text_lines(f"{_label(field, str(name))}: {first}".rstrip()))
        lines.extend(rest)
    return lines


def arguments_words(arguments: dict[str, Any], schema: dict[str, Any] | None = None) -> str:
    """A tool's arguments as a person reads them: one ``Label: value`` line each.

    Labels are the fields' ``title`` in ``schema`` (else their names in words); numbers carry
    their unit (``x-unit``), booleans read yes or no, an enum value its ``oneOf`` title,
    lists read as lists, nested objects as indented lines.
    """
    return "\n".join(_lines(arguments, schema, 0)) or "(no arguments)"


def asked_text(request: PendingInput) -> str:
    """What is asked, as plain text."""
    arguments = request.arguments
    kind = request_kind(request)
    if kind == "approval":
        return f"{request.tool_name}\n{arguments_words(arguments, request.answer_schema)}"
    if kind == Kind.CUSTOM:
        return f"{request.tool_name}\n{arguments_words(arguments)}"
    if kind == Kind.CONFIRM:
        details = arguments.get("details")
        if details is None:
            return str(arguments["action"])
        shown = arguments_words(details) if isinstance(details, dict) else str(details)
        return f"{arguments['action']}\n{shown}"
    if kind == Kind.QUESTIONS:
        return "\n".join(
            f"{index}. {item['question']}"
            for index, item in enumerate(arguments["questions"], start=1)
        )
    question = str(arguments["question"])
    labels = option_labels(arguments.get("options")) or []
    options = [line for label in labels for line in _text_lines(f"• {label}")]
    return "\n".join([question, *options])


def headline(notice: Notice, kind: str, *, to_you: bool = True) -> str:
    """The notice's first line: ``A question for you``, ``Still waiting: ...``.

    Args:
        to_you: the notice speaks to its recipient (a direct message); else it speaks of
            them (a team's channel).
    """
    what = f"Approval needed: {notice.request.tool_name}" if kind == "approval" else "A question"
    if notice.type == "question_reminder":
        return f"Still waiting: {what[0].lower()}{what[1:]}"
    if notice.type == "question_escalated":
        return f"Escalated: {what[0].lower()}{what[1:]}"
    if notice.type == "question_edited":
        return f"Edited, vote again: {what[0].lower()}{what[1:]}"
    return what if kind == "approval" or not to_you else "A question for you"


_VIA = {
    "desk": "in the desk",
    "slack": "in Slack",
    "email": "by email",
    "cli": "in the terminal",
    "api": "through the API",
    "mcp": "through MCP",
    "link": "through an answer link",
    "websocket": "in the chat",
}


def _decision(request: PendingInput) -> dict[str, Any] | None:
    try:
        value = json.loads(request.result or "")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def outcome_line(notice: Notice) -> str:
    """How the request ended, in a few words: ``Answered by alice in the desk``."""
    request = notice.request
    by = notice.answered_by or request.settled_by or "someone"
    return ended_words(request, outcome=notice.outcome, by=by, via=notice.answered_via)


def ended_words(
    request: PendingInput,
    *,
    outcome: str | None = None,
    by: str | None = None,
    via: str | None = None,
) -> str:
    """How ``request`` ended, in a few words: ``Approved by bob in the desk``, ``Declined by
    alice: not now``, ``Approved with changes by bob``, ``Timed out``, ``Withdrawn``.

    Args:
        request: the settled request.
        outcome: ``resolved``, ``rejected``, ``timed_out`` or ``withdrawn``; the request's
            status when not given.
        by: who settled it; the words name no one when not given.
        via: the surface the deciding answer came through (``desk``, ``slack``, ...).
    """
    outcome = outcome or str(request.status)
    if outcome == "timed_out":
        return "Timed out"
    if outcome == "withdrawn" or request.withdrawn:
        return "Withdrawn"
    where = f" {_VIA.get(via, f'via {via}')}" if via else ""
    who = f" by {by}" if by else ""
    kind = request_kind(request)
    decision = _decision(request) or {}
    if outcome == "rejected":
        verb = "Rejected" if kind == "approval" else "Declined"
        reason = f": {request.reject_reason}" if request.reject_reason else ""
        return clip(f"{verb}{who}{where}{reason}", 300)
    if kind == "approval":
        verb = {
            "approve": "Approved",
            "edit": "Approved with changes",
            "reject": "Rejected",
            "respond": "Answered instead",
        }.get(str(decision.get("decision")), "Decided")
        return f"{verb}{who}{where}"
    if kind == Kind.CONFIRM and decision.get("confirmed") is True:
        return f"Confirmed{who}{where}"
    if kind == Kind.CONFIRM and decision.get("confirmed") is False:
        return f"Declined{who}{where}"
    return f"Answered{who}{where}"

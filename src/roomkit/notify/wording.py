"""How a notice reads in words, for every surface: what is asked, and how it ended.

Plain text only: each surface escapes or places it as its own format needs (Slack as
``plain_text``, email in HTML, ...). Nothing here depends on a surface's SDK.
"""

from __future__ import annotations

import json
from typing import Any

from roomkit.models.kinds import Kind, kind_of, option_labels
from roomkit.models.pending_input import PendingInput
from roomkit.notify.surface import Notice

__all__ = ["asked_text", "clip", "headline", "outcome_line", "request_kind"]


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def request_kind(request: PendingInput) -> str:
    """``approval`` for an approval, else the question's shape (see ``roomkit.models.kinds``)."""
    if getattr(request, "kind", None) == "approval":
        return "approval"
    return str(kind_of(request.tool_name, request.arguments))


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def asked_text(request: PendingInput) -> str:
    """What is asked, as plain text."""
    arguments = request.arguments
    kind = request_kind(request)
    if kind == "approval" or kind == Kind.CUSTOM:
        return f"{request.tool_name}\n{_json(arguments)}"
    if kind == Kind.CONFIRM:
        details = arguments.get("details")
        return str(arguments["action"]) + ("" if details is None else f"\n{_json(details)}")
    if kind == Kind.QUESTIONS:
        return "\n".join(
            f"{index}. {item['question']}"
            for index, item in enumerate(arguments["questions"], start=1)
        )
    question = str(arguments["question"])
    labels = option_labels(arguments.get("options")) or []
    return "\n".join([question, *(f"• {label}" for label in labels)])


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
    outcome = notice.outcome or str(request.status)
    if outcome == "timed_out":
        return "Timed out"
    if outcome == "withdrawn" or request.withdrawn:
        return "Withdrawn"
    by = notice.answered_by or request.settled_by or "someone"
    via = notice.answered_via
    where = f" {_VIA.get(via, f'via {via}')}" if via else ""
    kind = request_kind(request)
    decision = _decision(request) or {}
    if outcome == "rejected":
        verb = "Rejected" if kind == "approval" else "Declined"
        reason = f": {request.reject_reason}" if request.reject_reason else ""
        return clip(f"{verb} by {by}{where}{reason}", 300)
    if kind == "approval":
        verb = {
            "approve": "Approved",
            "edit": "Approved with changes",
            "reject": "Rejected",
            "respond": "Answered instead",
        }.get(str(decision.get("decision")), "Decided")
        return f"{verb} by {by}{where}"
    if kind == Kind.CONFIRM and decision.get("confirmed") is True:
        return f"Confirmed by {by}{where}"
    if kind == Kind.CONFIRM and decision.get("confirmed") is False:
        return f"Declined by {by}{where}"
    return f"Answered by {by}{where}"

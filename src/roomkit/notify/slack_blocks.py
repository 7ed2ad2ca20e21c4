"""The Slack messages of a request, in Block Kit, and the buttons' action ids.

A message shows what is asked, as plain text (Slack reads nothing a model wrote as a
mention, a link or markup), with one button per answer for the shapes a click answers: a
single choice among a few options, a confirmation, an approval. Every other shape gets an
"Answer in the desk" link button. Once the request settles, the message is replaced by
what was asked and how it ended.

A button's ``value`` is the request's id and its ``action_id`` says what the click means
(:func:`parse_action`); the desk's interactivity endpoint reads the answer from the request
as the store holds it, so a click carries no answer text of its own to trust.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from roomkit.models.kinds import Kind, kind_of, option_labels
from roomkit.models.pending_input import PendingInput
from roomkit.notify.surface import Notice

__all__ = [
    "ACTION_PREFIX",
    "MAX_CHOICE_BUTTONS",
    "Action",
    "asked_text",
    "escape",
    "message_blocks",
    "notification_text",
    "outcome_line",
    "parse_action",
    "request_kind",
    "settled_blocks",
]

ACTION_PREFIX = "roomkit:"
"""Every action id of a roomkit message starts with it."""
MAX_CHOICE_BUTTONS = 10
"""A single choice among more options than this is answered in the desk."""
_TEXT_MAX = 2900
_BUTTON_MAX = 75
_HEADER_MAX = 150
_URL_MAX = 3000
_NOTIFICATION_MAX = 300

_SLACK_ID = re.compile(r"[A-Z0-9]{2,30}")

Verb = Literal["choose", "confirm", "approve", "reject", "open"]


@dataclass(frozen=True, slots=True)
class Action:
    """What one button of a roomkit message means."""

    verb: Verb
    """``choose`` (an option), ``confirm`` (yes or no), ``approve``, ``reject``, ``open``
    (the link to the desk, which answers nothing)."""
    option: int | None = None
    """The option's index, for ``choose``."""
    confirmed: bool | None = None
    """Yes or no, for ``confirm``."""


def parse_action(action_id: str) -> Action | None:
    """The meaning of a roomkit button's ``action_id``, or ``None`` for any other id."""
    if not action_id.startswith(ACTION_PREFIX):
        return None
    verb, _, rest = action_id.removeprefix(ACTION_PREFIX).partition(":")
    if verb == "choose" and rest.isdecimal() and len(rest) <= 4:
        return Action("choose", option=int(rest))
    if verb == "confirm" and rest in {"yes", "no"}:
        return Action("confirm", confirmed=rest == "yes")
    if verb in {"approve", "reject", "open"} and not rest:
        return Action(verb)  # type: ignore[arg-type]  # narrowed by the set above
    return None


def request_kind(request: PendingInput) -> str:
    """``approval`` for an approval, else the question's shape (see ``roomkit.models.kinds``)."""
    if getattr(request, "kind", None) == "approval":
        return "approval"
    return str(kind_of(request.tool_name, request.arguments))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(text: str, limit: int = _TEXT_MAX) -> PlainTextObject:
    return PlainTextObject(text=_clip(text or " ", limit), emoji=False)


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


def _headline(notice: Notice, kind: str) -> str:
    what = f"Approval needed: {notice.request.tool_name}" if kind == "approval" else "A question"
    if notice.type == "question_reminder":
        return f"Still waiting: {what[0].lower()}{what[1:]}"
    if notice.type == "question_escalated":
        return f"Escalated: {what[0].lower()}{what[1:]}"
    return what if kind == "approval" else "A question for you"


def notification_text(notice: Notice) -> str:
    """The message's text for notifications and screen readers: the headline and the question."""
    kind = request_kind(notice.request)
    first = asked_text(notice.request).partition("\n")[0]
    return _clip(escape(f"{_headline(notice, kind)}: {first}"), _NOTIFICATION_MAX)


def _choices(request: PendingInput, kind: str) -> list[ButtonElement]:
    """The buttons that answer ``request`` in one click (none for the other shapes)."""
    if kind == "approval":
        return [
            ButtonElement(text="Approve", action_id=f"{ACTION_PREFIX}approve", style="primary"),
            ButtonElement(text="Reject", action_id=f"{ACTION_PREFIX}reject", style="danger"),
        ]
    if kind == Kind.CONFIRM:
        return [
            ButtonElement(text="Yes", action_id=f"{ACTION_PREFIX}confirm:yes", style="primary"),
            ButtonElement(text="No", action_id=f"{ACTION_PREFIX}confirm:no"),
        ]
    if kind != Kind.QUESTION or request.arguments.get("multiSelect") is True:
        return []
    labels = option_labels(request.arguments.get("options")) or []
    if not labels or len(labels) > MAX_CHOICE_BUTTONS:
        return []
    return [
        ButtonElement(text=_clip(label, _BUTTON_MAX), action_id=f"{ACTION_PREFIX}choose:{index}")
        for index, label in enumerate(labels)
    ]


def _link(notice: Notice, *, one_click: bool) -> ButtonElement | None:
    url = notice.answer_url or notice.desk_url
    if not url or len(url) > _URL_MAX:
        return None
    label = "Open in the desk" if one_click else "Answer in the desk"
    return ButtonElement(text=label, action_id=f"{ACTION_PREFIX}open", url=url)


def message_blocks(notice: Notice, *, mention: str | None = None) -> list[dict[str, Any]]:
    """The blocks of the message telling ``notice``: what is asked and how to answer.

    Args:
        notice: a pending, reminder or escalation notice.
        mention: a Slack user id to mention (a message posted in a channel).
    """
    request = notice.request
    kind = request_kind(request)
    buttons = _choices(request, kind)
    link = _link(notice, one_click=bool(buttons))
    for button in buttons:
        button.value = request.pending_id
    blocks: list[Block] = [
        HeaderBlock(text=_plain(_headline(notice, kind), _HEADER_MAX)),
        SectionBlock(text=_plain(asked_text(request))),
    ]
    context: list[PlainTextObject | MarkdownTextObject] = []
    if mention and _SLACK_ID.fullmatch(mention):
        # The mention is the one piece of markup, and it holds only a Slack id.
        context.append(MarkdownTextObject(text=f"For <@{mention}>"))
    where = [f"room {request.room_id}" if request.room_id else "", request.tool_name]
    context.append(_plain(" · ".join(part for part in where if part)))
    blocks.append(ContextBlock(elements=context))
    elements: Sequence[ButtonElement] = [*buttons, *([link] if link else [])]
    if elements:
        blocks.append(ActionsBlock(elements=list(elements), block_id=f"{ACTION_PREFIX}{kind}"))
    return [block.to_dict() for block in blocks]


def escape(text: str) -> str:
    """``text`` with Slack's three control characters escaped, so that it reads as text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_VIA = {
    "desk": "in the desk",
    "slack": "in Slack",
    "email": "by email",
    "cli": "in the terminal",
    "api": "through the API",
    "mcp": "through MCP",
    "link": "through an answer link",
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
        return _clip(f"{verb} by {by}{where}{reason}", 300)
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


def settled_blocks(notice: Notice) -> list[dict[str, Any]]:
    """The blocks that replace a message once its request settled: what, and how it ended."""
    request = notice.request
    blocks: list[Block] = [
        SectionBlock(text=_plain(asked_text(request))),
        ContextBlock(elements=[_plain(outcome_line(notice))]),
    ]
    return [block.to_dict() for block in blocks]

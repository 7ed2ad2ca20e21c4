"""The Slack messages of a request, in Block Kit, and the buttons' action ids.

A message shows what is asked, as plain text (Slack reads nothing a model wrote as a
mention, a link or markup, and a bidi override or a control character in it shows as
``�``), with one button per answer for the shapes a click answers: a single choice among a
few options, a confirmation, an approval. Every other shape gets an "Answer in the desk"
link button. Once the request settles, the message is replaced by
what was asked and how it ended.

A request longer than a message shows (:func:`too_long`) is cut short, and then no button
approves or answers it: the person would decide on what they have not read. The message says
it is too long to decide there, and links to the desk; an approval keeps Reject, as refusing
a call runs nothing. A choice whose option does not fit on its button is answered in the desk
too.

A button's ``value`` is the request's id and its ``action_id`` says what the click means
(:func:`parse_action`); the desk's interactivity endpoint reads the answer from the request
as the store holds it, so a click carries no answer text of its own to trust. An approval's
buttons name the digest of the arguments the message shows (``roomkit:approve:<digest>``):
the desk decides on those arguments or on none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from roomkit._extras import requires_extra

with requires_extra("roomkit.notify.slack_blocks", "slack"):
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

from roomkit.models.decisions import allowed_decisions
from roomkit.models.kinds import Kind, option_labels
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.notify.surface import Notice
from roomkit.notify.wording import asked_text, clip, headline, outcome_line, request_kind, shown

__all__ = [
    "ACTION_PREFIX",
    "MAX_CHOICE_BUTTONS",
    "TOO_LONG",
    "Action",
    "escape",
    "fits_button",
    "message_blocks",
    "notification_text",
    "parse_action",
    "settled_blocks",
    "too_long",
]

ACTION_PREFIX = "roomkit:"
"""Every action id of a roomkit message starts with it."""
MAX_CHOICE_BUTTONS = 10
"""A single choice among more options than this is answered in the desk."""
TOO_LONG = "Too long to decide here: open it in the desk"
"""The last line of a message whose request is cut short."""
_TEXT_MAX = 2900
_BUTTON_MAX = 75
_HEADER_MAX = 150
_URL_MAX = 3000
_NOTIFICATION_MAX = 300

_SLACK_ID = re.compile(r"[A-Z0-9]{2,30}")
_DIGEST = re.compile(r"[0-9a-f]{64}")

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
    digest: str | None = None
    """For ``approve`` and ``reject``: the digest of the arguments the message showed
    (``None`` on a button of a message sent before buttons named it)."""


def parse_action(action_id: str) -> Action | None:
    """The meaning of a roomkit button's ``action_id``, or ``None`` for any other id."""
    if not action_id.startswith(ACTION_PREFIX):
        return None
    verb, _, rest = action_id.removeprefix(ACTION_PREFIX).partition(":")
    if verb == "choose" and rest.isdecimal() and len(rest) <= 4:
        return Action("choose", option=int(rest))
    if verb == "confirm" and rest in {"yes", "no"}:
        return Action("confirm", confirmed=rest == "yes")
    if verb in {"approve", "reject"} and _DIGEST.fullmatch(rest):
        return Action(cast(Verb, verb), digest=rest)
    if verb in {"approve", "reject", "open"} and not rest:
        return Action(cast(Verb, verb))
    return None


def _plain(text: str, limit: int = _TEXT_MAX) -> PlainTextObject:
    return PlainTextObject(text=clip(shown(text) or " ", limit), emoji=False)


def too_long(request: PendingInput) -> bool:
    """Whether what ``request`` asks is longer than its message shows: then the message is
    cut short, and no button of it approves or answers (a Reject stays)."""
    return len(shown(asked_text(request))) > _TEXT_MAX


def fits_button(label: str) -> bool:
    """Whether the option ``label`` shows whole on a button: a label cut short there could
    choose what it does not say, so a choice holding a longer one is answered in the desk."""
    return len(label) <= _BUTTON_MAX


def _asked(request: PendingInput) -> str:
    """What the message shows of ``request``: all of it, or its start and :data:`TOO_LONG`."""
    asked = shown(asked_text(request))
    if not too_long(request):
        return asked
    return f"{clip(asked, _TEXT_MAX - len(TOO_LONG) - 2)}\n\n{TOO_LONG}"


def notification_text(notice: Notice, *, in_channel: bool = False) -> str:
    """The message's text for notifications and screen readers: the headline and the question.

    Args:
        in_channel: the message is posted in a channel (else it is a direct message).
    """
    kind = request_kind(notice.request)
    first = asked_text(notice.request).partition("\n")[0]
    line = headline(notice, kind, to_you=not in_channel)
    return clip(escape(f"{line}: {first}"), _NOTIFICATION_MAX)


_DECIDING = (("approve", "Approve", "primary"), ("reject", "Reject", "danger"))
"""The decisions an approval's message takes in one click: each button's decision, text and
style."""


def _choices(request: PendingInput, kind: str) -> list[ButtonElement]:
    """The buttons that answer ``request`` in one click (none for the other shapes); for a
    request :func:`too_long` for its message, none but an approval's Reject."""
    clipped = too_long(request)
    if kind == "approval":
        # Each names the arguments the message shows: a click decides on those or on none.
        named = request.arguments_digest or arguments_digest(request.tool_name, request.arguments)
        # An approval may take fewer decisions (a framework's): a button it refuses is none.
        allowed = allowed_decisions(request)
        # A refusal runs nothing, whatever the person did not read: it alone stays.
        offered = {"reject"} if clipped else {"approve", "reject"}
        return [
            ButtonElement(text=text, action_id=f"{ACTION_PREFIX}{decision}:{named}", style=style)
            for decision, text, style in _DECIDING
            if decision in allowed and decision in offered
        ]
    if clipped:
        # A No answers a confirmation as much as a Yes: neither decides what was not shown.
        return []
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
    if not all(fits_button(label) for label in labels):
        return []
    return [
        ButtonElement(text=shown(label), action_id=f"{ACTION_PREFIX}choose:{index}")
        for index, label in enumerate(labels)
    ]


def _link(notice: Notice, *, one_click: bool) -> ButtonElement | None:
    url = notice.answer_url or notice.desk_url
    if not url or len(url) > _URL_MAX:
        return None
    label = "Open in the desk" if one_click else "Answer in the desk"
    return ButtonElement(text=label, action_id=f"{ACTION_PREFIX}open", url=url)


def message_blocks(
    notice: Notice, *, in_channel: bool = False, mention: str | None = None
) -> list[dict[str, Any]]:
    """The blocks of the message telling ``notice``: what is asked and how to answer.

    Args:
        notice: a pending, reminder or escalation notice.
        in_channel: the message is posted in a channel (else it is a direct message).
        mention: a Slack user id to mention (in a channel, the person it is for).
    """
    request = notice.request
    kind = request_kind(request)
    buttons = _choices(request, kind)
    link = _link(notice, one_click=bool(buttons))
    for button in buttons:
        button.value = request.pending_id
    blocks: list[Block] = [
        HeaderBlock(text=_plain(headline(notice, kind, to_you=not in_channel), _HEADER_MAX)),
        SectionBlock(text=_plain(_asked(request))),
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
    """``text`` with Slack's three control characters escaped, so that it reads as text, and
    what would change how it reads (a bidi override, a control character) replaced."""
    return shown(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def settled_blocks(notice: Notice) -> list[dict[str, Any]]:
    """The blocks that replace a message once its request settled: what, and how it ended."""
    request = notice.request
    blocks: list[Block] = [
        SectionBlock(text=_plain(asked_text(request))),
        ContextBlock(elements=[_plain(outcome_line(notice))]),
    ]
    return [block.to_dict() for block in blocks]

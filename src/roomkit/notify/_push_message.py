"""What Web Push sends: the Declarative Web Push message of a notice, and its ``Topic``.

The message is Declarative Web Push JSON (``{"web_push": 8030, "notification": {...}}``),
which Safari shows as it is and the desk's service worker shows elsewhere (see
:mod:`roomkit.notify.webpush`, which encrypts it to each device and pushes it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from roomkit.notify._phone import BODY_MAX, TITLE_MAX, PhoneNotice, phone_notice
from roomkit.notify.surface import DeliveryError, Notice

__all__ = ["DECLARATIVE", "MAX_MESSAGE_BYTES", "encoded", "push_message", "topic"]

DECLARATIVE = 8030
"""The ``web_push`` member that marks a Declarative Web Push message."""
MAX_MESSAGE_BYTES = 3000
"""The most a message's JSON may take: push services take 4096 bytes once encrypted."""


def push_message(notice: Notice) -> dict[str, Any]:
    """The Declarative Web Push message for ``notice``.

    Raises:
        DeliveryError: the notice has no link to open (give the notifier ``desk_url``), or
            its message would not fit in a push.
    """
    link = notice.answer_url or notice.desk_url
    if not link:
        raise DeliveryError(
            "WebPush needs a link to open: give the Notifier desk_url=...", retry=False
        )
    # Too long for a push (wide letters: up to four bytes each, the title once per button),
    # the text is cut until it fits, and a request cut short loses the buttons that answer
    # it; what then still does not fit is the links.
    for title_max, body_max in _LENGTHS:
        message = _message(notice, phone_notice(notice, title_max=title_max, body_max=body_max))
        if len(encoded(message)) <= MAX_MESSAGE_BYTES:
            return message
    raise DeliveryError(
        f"WebPush: the message for {notice.request.pending_id} does not fit in a push "
        f"({len(encoded(message))} bytes over {MAX_MESSAGE_BYTES}): shorten the desk's URL "
        f"({len(link)} characters in its answer link)",
        retry=False,
    )


_LENGTHS = ((TITLE_MAX, BODY_MAX), (TITLE_MAX, 100), (40, 100), (40, 40))
"""The title's and the body's lengths, tried in turn until a message fits."""


def _message(notice: Notice, shown: PhoneNotice) -> dict[str, Any]:
    link = notice.answer_url or notice.desk_url
    settled = notice.type == "question_settled"
    notification: dict[str, Any] = {
        "title": shown.title,
        "body": shown.body,
        "tag": notice.request.pending_id,
        "navigate": link,
        "lang": "en",
        "silent": settled,
        "renotify": notice.type in ("question_reminder", "question_escalated", "question_edited"),
        "require_interaction": not settled,
    }
    actions = [{"action": a.action, "title": a.label, "navigate": link} for a in shown.answers]
    if shown.clipped:
        # The worker opens the link for a button it has no answer for.
        actions.append({"action": "open", "title": "Open", "navigate": link})
    if actions:
        notification["actions"] = actions
    if shown.answers:
        notification["data"] = {
            "answers": {
                a.action: {"url": a.url, "body": a.body, "done": a.done, "done_body": shown.title}
                for a in shown.answers
            }
        }
    return {"web_push": DECLARATIVE, "notification": notification}


def encoded(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def topic(pending_id: str) -> str:
    """The ``Topic`` header of a request's pushes: at most 32 base64url characters."""
    return hashlib.sha256(pending_id.encode("utf-8")).hexdigest()[:32]

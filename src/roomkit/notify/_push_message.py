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

from roomkit.notify._phone import TITLE_MAX, answers_of, lines_of
from roomkit.notify.surface import DeliveryError, Notice
from roomkit.notify.wording import clip

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
    title, body = lines_of(notice)
    settled = notice.type == "question_settled"
    answers = answers_of(notice)
    notification: dict[str, Any] = {
        "title": title,
        "body": body,
        "tag": notice.request.pending_id,
        "navigate": link,
        "lang": "en",
        "silent": settled,
        "renotify": notice.type in ("question_reminder", "question_escalated", "question_edited"),
        "require_interaction": not settled,
    }
    if answers:
        notification["actions"] = [
            {"action": a.action, "title": a.label, "navigate": link} for a in answers
        ]
        notification["data"] = {
            "answers": {
                a.action: {"url": a.url, "body": a.body, "done": a.done, "done_body": title}
                for a in answers
            }
        }
    message = {"web_push": DECLARATIVE, "notification": notification}
    # Too long for a push (wide letters: up to four bytes each, the title once per button),
    # the text is cut until it fits; what then still does not is the links.
    for title_max, body_max in _SHORTER:
        if len(encoded(message)) <= MAX_MESSAGE_BYTES:
            return message
        _cut(notification, clip(title, title_max), clip(body, body_max))
    if len(encoded(message)) > MAX_MESSAGE_BYTES:
        raise DeliveryError(
            f"WebPush: the message for {notice.request.pending_id} does not fit in a push "
            f"({len(encoded(message))} bytes over {MAX_MESSAGE_BYTES}): shorten the desk's URL "
            f"({len(link)} characters in its answer link)",
            retry=False,
        )
    return message


_SHORTER = ((TITLE_MAX, 100), (40, 100), (40, 40))
"""The title's and the body's lengths to cut to, in turn, while a message does not fit."""


def _cut(notification: dict[str, Any], title: str, body: str) -> None:
    notification["title"], notification["body"] = title, body
    for answer in notification.get("data", {}).get("answers", {}).values():
        answer["done_body"] = title


def encoded(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def topic(pending_id: str) -> str:
    """The ``Topic`` header of a request's pushes: at most 32 base64url characters."""
    return hashlib.sha256(pending_id.encode("utf-8")).hexdigest()[:32]

"""What a notice on a phone says, and the answers its buttons send: shared by Web Push and ntfy.

A phone notice has a title, a short body, the link it opens (the signed, single-use answer
link; the desk's page once the request settled) and, for a request one tap can answer (an
approval, a yes-or-no question), the buttons: each one an HTTP request to the desk's API,
``POST <desk>/api/requests/<id>/answer`` (or ``/reject``) with the answer link's token as its
bearer token, so that it answers once, as the person the link was issued to, exactly as the
link would. The token is the link's, read from its fragment.

A request too long for the notice is cut short, and then no button approves or answers it:
the person would decide on what they have not read. The notice says it is too long to
decide there, and opens the request on the desk; a Reject stays, as refusing a call runs
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from roomkit.models.decisions import allowed_decisions
from roomkit.models.kinds import Kind
from roomkit.notify.surface import Notice
from roomkit.notify.wording import asked_text, clip, headline, outcome_line, request_kind, shown

__all__ = ["PhoneAnswer", "PhoneNotice", "link_token", "phone_notice"]

TITLE_MAX = 120
BODY_MAX = 400
REJECT_REASON = "Rejected from a phone notification"
"""The reason a reject button gives (the model reads it)."""
TOO_LONG = "Too long to decide here: open it on the desk"
"""The last line of a notice whose request is cut short."""


@dataclass(frozen=True, slots=True)
class PhoneAnswer:
    """One button that answers: what it reads, and the request it sends to the desk."""

    action: str
    """A short, stable name (``approve``, ``reject``, ``yes``, ``no``)."""
    label: str
    """What the button reads."""
    url: str
    """The desk's API route it POSTs to."""
    body: dict[str, Any]
    """The JSON it POSTs."""
    done: str
    """What the notice reads once the desk took the answer."""


@dataclass(frozen=True, slots=True)
class PhoneNotice:
    """What a phone notice shows, and the buttons that answer from it."""

    title: str
    body: str
    """The question (or how it ended) in a few lines, no character in them changing how the
    others read; cut short, it ends in an ellipsis and :data:`TOO_LONG`."""
    answers: list[PhoneAnswer]
    clipped: bool
    """Whether the body shows less than is asked: then no button approves or answers."""


def phone_notice(
    notice: Notice, *, title_max: int = TITLE_MAX, body_max: int = BODY_MAX
) -> PhoneNotice:
    """``notice`` as a phone shows it, its title and the question cut to the lengths given."""
    request = notice.request
    asked = shown(asked_text(request))
    if notice.type == "question_settled":
        first = asked.partition("\n")[0]
        title = clip(shown(outcome_line(notice)), title_max)
        return PhoneNotice(title, clip(first, body_max), [], clipped=False)
    title = clip(shown(headline(notice, request_kind(request), to_you=True)), title_max)
    clipped = len(asked) > body_max
    body = f"{clip(asked, body_max)}\n\n{TOO_LONG}" if clipped else asked
    return PhoneNotice(title, body, _answers(notice, clipped=clipped), clipped)


def link_token(answer_url: str | None) -> str | None:
    """The token in an answer link's fragment (``<desk>/#token=...``), or ``None``."""
    if not answer_url:
        return None
    values = parse_qs(urlsplit(answer_url).fragment).get("token")
    return values[0] if values else None


def _answers(notice: Notice, *, clipped: bool) -> list[PhoneAnswer]:
    """The buttons that answer ``notice``'s request in one tap; none once it settled, without
    an answer link, or for a request that takes more than a tap (free text, a form, options).
    An approval gets Approve and Reject, those of the two it takes; Reject alone when the
    notice is ``clipped``, and a yes-or-no question then none (its No answers it too)."""
    request = notice.request
    if notice.type == "question_settled" or not notice.answer_url or not notice.desk_url:
        return []
    api = f"{notice.desk_url.rstrip('/')}/api/requests/{quote(request.pending_id, safe='')}"
    kind = request_kind(request)
    if kind == "approval":
        digest = getattr(request, "arguments_digest", None)
        named = {} if digest is None else {"digest": digest}
        buttons = [
            PhoneAnswer(
                "approve", "Approve", f"{api}/answer", {"decision": "approve", **named}, "Approved"
            ),
            PhoneAnswer(
                "reject", "Reject", f"{api}/reject", {"reason": REJECT_REASON, **named}, "Rejected"
            ),
        ]
        # An approval may take fewer decisions (a framework's): a button it refuses is none.
        allowed = allowed_decisions(request)
        taken = [button for button in buttons if button.action in allowed]
        # A refusal runs nothing, whatever the person did not read: it alone stays.
        return [button for button in taken if button.action == "reject"] if clipped else taken
    if kind == Kind.CONFIRM and not clipped:
        return [
            PhoneAnswer("yes", "Yes", f"{api}/answer", {"confirmed": True}, "Confirmed"),
            PhoneAnswer("no", "No", f"{api}/answer", {"confirmed": False}, "Declined"),
        ]
    return []

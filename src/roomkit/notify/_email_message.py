"""The message a notice becomes: subject, plain text and HTML with the answer link.

Shared by :class:`~roomkit.notify.email.Email` (SMTP) and
:class:`~roomkit.notify.email_files.EmailFiles` (``.eml`` files), so that what a developer
reads in a file is what a person gets in their mailbox.
"""

from __future__ import annotations

import html
from email import errors
from email.header import Header
from email.message import EmailMessage

from roomkit.models.kinds import Kind
from roomkit.notify.surface import DeliveryError, Notice, Person
from roomkit.notify.wording import asked_text, request_kind, shown

__all__ = ["Mailbox", "address_problem", "email_message", "email_texts"]


def _question(notice: Notice) -> str:
    """What is asked, as the message shows it: nothing in it changes how the rest reads.

    A question is its text; any other request (an approval, whose tool may take a
    ``question`` of its own beside the amount it pays) shows every argument.
    """
    request = notice.request
    question = request.arguments.get("question")
    if request_kind(request) == Kind.QUESTION and isinstance(question, str) and question:
        return shown(question)
    return shown(asked_text(request))


def _ending(notice: Notice) -> str:
    outcome = notice.outcome
    if outcome == "resolved":
        who = notice.answered_by or "someone"
        where = f" on {notice.answered_via}" if notice.answered_via else ""
        return f"{who} answered it{where}. Nothing more is needed from you."
    if outcome == "rejected":
        return f"{notice.answered_by or 'Someone'} declined it. Nothing more is needed from you."
    if outcome == "timed_out":
        return "Nobody answered in time; it has closed."
    return "It was withdrawn; it needs no answer any more."


def email_texts(notice: Notice) -> tuple[str, str, str]:
    """The subject, plain text and HTML of the message for ``notice``."""
    question, ending = _question(notice), shown(_ending(notice))
    first = question.splitlines()[0] if question else ""
    short = first if len(first) <= 60 else first[:57] + "..."
    lead, subject = {
        "question_pending": ("You are asked:", f"Question: {short}"),
        "question_reminder": ("Still waiting for your answer:", f"Reminder: {short}"),
        "question_escalated": ("This question now reaches you too:", f"Escalated: {short}"),
        "question_edited": ("An approver edited it: your vote counts again.", f"Edited: {short}"),
        "question_settled": ("This question has closed:", f"Closed: {short}"),
    }[notice.type]
    lines = [lead, "", question, ""]
    if notice.type == "question_settled":
        lines.append(ending)
    elif notice.answer_url:
        lines.append(f"Answer here (the link works once): {notice.answer_url}")
    if notice.deadline_at is not None and notice.type != "question_settled":
        lines.append(f"It closes at {notice.deadline_at:%Y-%m-%d %H:%M} UTC.")
    plain = "\n".join(lines) + "\n"
    parts = [f"<p>{html.escape(lead)}</p>", f"<blockquote>{_html_lines(question)}</blockquote>"]
    if notice.type == "question_settled":
        parts.append(f"<p>{html.escape(ending)}</p>")
    elif notice.answer_url:
        link = html.escape(notice.answer_url, quote=True)
        parts.append(f'<p><a href="{link}">Answer</a> (the link works once)</p>')
    return subject, plain, "<html><body>" + "".join(parts) + "</body></html>"


def _html_lines(text: str) -> str:
    """``text`` as HTML that shows it line by line, each line's indent kept: HTML runs lines
    together, and an approval's arguments would read as one line, with no field told apart."""
    lines = text.split("\n")
    return "<br>".join(
        "&nbsp;" * (len(line) - len(line.lstrip(" "))) + html.escape(line.lstrip(" "))
        for line in lines
    )


def address_problem(text: object) -> str | None:
    """What makes ``text`` no single email address (``alice@example.com``, or with a name:
    ``Alice Smith <alice@example.com>``), or ``None`` when it is one.

    A line break would start a header of its own (a ``Bcc:``), a comma a second recipient
    the answer link would reach, a control character no server takes: each is refused before
    anything is sent.
    """
    if not isinstance(text, str) or not text.strip():
        return "is empty"
    if any(ord(character) < 32 or ord(character) == 127 for character in text):
        return "holds a line break or a control character"
    probe = EmailMessage()
    try:
        probe["To"] = text
        addresses = probe["To"].addresses
        defects = probe["To"].defects
    except (ValueError, IndexError):  # the parser's own failures on an address cut short
        return "cannot be read as an address"
    if len(addresses) != 1:
        return f"names {len(addresses)} addresses, where one is needed"
    local, _, domain = addresses[0].addr_spec.rpartition("@")
    # An address in UTF-8 (SMTPUTF8) is one all the same.
    unread = [d for d in defects if not isinstance(d, errors.NonASCIILocalPartDefect)]
    if not local or not domain or unread:
        return "cannot be read as an address"
    return None


def email_message(notice: Notice, sender: str, address: str) -> EmailMessage:
    """The whole message for ``notice`` to ``address``; its ``Message-ID`` is the delivery's,
    the same on every retry."""
    subject, plain, rich = email_texts(notice)
    message = EmailMessage()
    message["From"], message["To"] = sender, address
    _set_subject(message, subject)
    message["Message-ID"] = f"<{notice.delivery_id}@roomkit>"
    message.set_content(plain)
    message.add_alternative(rich, subtype="html")
    return message


def _set_subject(message: EmailMessage, subject: str) -> None:
    """Give ``message`` the subject ``subject``, read as the text it is.

    A header's value is read for RFC 2047 encoded words (``=?utf-8?q?...?=``): a question
    holding one would be decoded, to a line break and the headers after it on a Python
    without the fix for CVE-2024-6923. Such a subject goes encoded by the surface instead,
    folded, so that it is written as it is and read back as its own text.
    """
    if "=?" not in subject:
        message["Subject"] = subject
        return
    message.set_raw("Subject", Header(subject, "utf-8", header_name="Subject").encode())


class Mailbox:
    """What the email surfaces share: whom they reach, and the message each notice becomes."""

    sender: str
    """The ``From`` address."""

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """An approver whose directory entry has an email address."""
        return recipient is not None and person is not None and bool(person.email)

    def _addressed(self, notice: Notice) -> tuple[str, EmailMessage]:
        """The recipient's address and the message for it.

        Raises:
            DeliveryError: the recipient has no email address, or one that is not a single
                address (not worth a retry).
        """
        address = notice.person.email if notice.person is not None else None
        if not address:
            raise DeliveryError(f"{notice.recipient!r} has no email address", retry=False)
        problem = address_problem(address)
        if problem is not None:
            raise DeliveryError(
                f"{notice.recipient!r}'s email address in the directory, {address[:200]!r}, "
                f"{problem}: give one address, such as alice@example.com",
                retry=False,
            )
        return address, email_message(notice, self.sender, address)

"""Email over SMTP (``aiosmtplib``): plain text and HTML, with the answer link.

Each approver with an email address in the directory gets their own message, with a link
that answers as them. Once the request settles nothing further is sent but the word of how
it ended.
"""

from __future__ import annotations

import html
import json
import os
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from typing import Any, Literal

import aiosmtplib

from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Notice, Person

__all__ = ["Email", "email_texts"]

Security = Literal["starttls", "tls", "none"]


def _question(notice: Notice) -> str:
    arguments = notice.request.arguments
    question = arguments.get("question")
    if isinstance(question, str) and question:
        return question
    return f"{notice.request.tool_name}({json.dumps(arguments, ensure_ascii=False)})"


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
    question = _question(notice)
    short = question if len(question) <= 60 else question[:57] + "..."
    lead, subject = {
        "question_pending": ("You are asked:", f"Question: {short}"),
        "question_reminder": ("Still waiting for your answer:", f"Reminder: {short}"),
        "question_escalated": ("This question now reaches you too:", f"Escalated: {short}"),
        "question_edited": ("An approver edited it: your vote counts again.", f"Edited: {short}"),
        "question_settled": ("This question has closed:", f"Closed: {short}"),
    }[notice.type]
    lines = [lead, "", question, ""]
    if notice.type == "question_settled":
        lines.append(_ending(notice))
    elif notice.answer_url:
        lines.append(f"Answer here (the link works once): {notice.answer_url}")
    if notice.deadline_at is not None and notice.type != "question_settled":
        lines.append(f"It closes at {notice.deadline_at:%Y-%m-%d %H:%M} UTC.")
    plain = "\n".join(lines) + "\n"
    parts = [f"<p>{html.escape(lead)}</p>", f"<blockquote>{html.escape(question)}</blockquote>"]
    if notice.type == "question_settled":
        parts.append(f"<p>{html.escape(_ending(notice))}</p>")
    elif notice.answer_url:
        link = html.escape(notice.answer_url, quote=True)
        parts.append(f'<p><a href="{link}">Answer</a> (the link works once)</p>')
    return subject, plain, "<html><body>" + "".join(parts) + "</body></html>"


def _trusting(cafile: str | os.PathLike[str]) -> ssl.SSLContext:
    try:
        return ssl.create_default_context(cafile=os.fspath(cafile))
    except OSError as error:  # ssl.SSLError among them
        raise ValueError(
            f"Email(cafile={os.fspath(cafile)!r}) cannot be read as PEM certificates ({error})"
        ) from None


def _untrusted(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate failure behind ``error`` (aiosmtplib wraps it on a TLS connect)."""
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return None


class Email:
    """Send each notice to its recipient's email address.

    Args:
        host: the SMTP server.
        port: 587 (STARTTLS) by default; 465 means TLS from the first byte.
        username: the login, when the server wants one.
        password: its password.
        sender: the ``From`` address.
        security: ``"starttls"``, ``"tls"`` or ``"none"`` (a local relay); by the port when
            not given (465: ``"tls"``, else ``"starttls"``).
        timeout: seconds one message may take.
        retry: when to try again after a connection error or a 4xx reply (never after a
            refusal, a refused login or a certificate that does not verify); every 5 s at
            first, at most every 5 minutes, for a day.
        cafile: a PEM file of the certificate authorities to trust instead of the system's
            (a server whose certificate a private CA signed).
        tls_context: the TLS settings in full, instead of ``cafile``.

    Raises:
        ValueError: an argument is missing or wrong, both ``cafile`` and ``tls_context``
            are given, or ``cafile`` cannot be read as certificates.
    """

    name = "email"

    def __init__(
        self,
        host: str,
        port: int = 587,
        username: str | None = None,
        password: str | None = None,
        sender: str = "",
        *,
        security: Security | None = None,
        timeout: float = 20.0,
        retry: Retry | None = None,
        cafile: str | os.PathLike[str] | None = None,
        tls_context: ssl.SSLContext | None = None,
    ) -> None:
        if not isinstance(host, str) or not host:
            raise ValueError("Email(host=...) names the SMTP server, e.g. 'smtp.example.com'")
        if not isinstance(sender, str) or "@" not in sender:
            raise ValueError(f"Email(sender=...) must be an email address, not {sender!r}")
        if (username is None) != (password is None):
            raise ValueError("Email takes username and password together, or neither")
        chosen = security or ("tls" if port == 465 else "starttls")
        if chosen not in ("starttls", "tls", "none"):
            raise ValueError(f"Email(security=...) is 'starttls', 'tls' or 'none', not {chosen!r}")
        self.host, self.port, self.sender, self.security = host, port, sender, chosen
        self._username, self._password = username, password
        self.timeout = timeout
        self.retry = retry if retry is not None else Retry(first=5.0, cap=300.0)
        if cafile is not None and tls_context is not None:
            raise ValueError("Email takes cafile= or tls_context=, not both")
        self._tls_context = tls_context if cafile is None else _trusting(cafile)

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """An approver whose directory entry has an email address."""
        return recipient is not None and person is not None and bool(person.email)

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Send one message; raises :class:`DeliveryError` saying what to fix."""
        address = notice.person.email if notice.person is not None else None
        if not address:
            raise DeliveryError(f"{notice.recipient!r} has no email address", retry=False)
        subject, plain, rich = email_texts(notice)
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = self.sender, address, subject
        message["Message-ID"] = f"<{notice.delivery_id}@roomkit>"
        message.set_content(plain)
        message.add_alternative(rich, subtype="html")
        try:
            await aiosmtplib.send(
                message,
                hostname=self.host,
                port=self.port,
                username=self._username,
                password=self._password,
                use_tls=self.security == "tls",
                start_tls=self.security == "starttls",
                timeout=self.timeout,
                tls_context=self._tls_context,
            )
        except aiosmtplib.SMTPRecipientsRefused as error:
            raise DeliveryError(
                f"the SMTP server refused {address} ({error}): check {notice.recipient!r}'s "
                "address in the directory",
                retry=False,
            ) from None
        except aiosmtplib.SMTPAuthenticationError as error:
            raise DeliveryError(
                f"the SMTP server refused the login ({error.code} {error.message}): check "
                "Email(username=..., password=...)",
                retry=False,
            ) from None
        except aiosmtplib.SMTPResponseException as error:
            raise DeliveryError(
                f"the SMTP server answered {error.code} {error.message}",
                retry=400 <= error.code < 500,
            ) from None
        except (aiosmtplib.SMTPException, OSError) as error:
            untrusted = _untrusted(error)
            if untrusted is not None:
                raise DeliveryError(
                    f"the certificate of the SMTP server {self.host}:{self.port} does not "
                    f"verify ({untrusted.verify_message}): for a private CA pass "
                    "Email(cafile=...), else fix the server's certificate or the host name",
                    retry=False,
                ) from None
            raise DeliveryError(
                f"the SMTP server {self.host}:{self.port} is unreachable ({error}): check the "
                "host, the port and the security setting",
                retry=True,
            ) from None
        return {"to": address, "message_id": message["Message-ID"]}

    async def aclose(self) -> None:
        """Each message opens its own connection: nothing to close."""

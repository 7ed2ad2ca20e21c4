"""An aiosmtpd SMTP server on loopback that keeps the messages it accepts; with TLS (from
the first byte, or by STARTTLS) and a login when asked."""

from __future__ import annotations

import asyncio
import email
import email.policy
import queue
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from tests.servers.ports import free_port


class Mailbox:
    """Accepts mail for any address except those in ``refuse`` (550); puts off the first
    message to each address in ``put_off`` (450, as a greylisting server does)."""

    def __init__(
        self, refuse: frozenset[str] = frozenset(), put_off: frozenset[str] = frozenset()
    ) -> None:
        self.refuse = refuse
        self.put_off = set(put_off)
        self.messages: queue.Queue[EmailMessage] = queue.Queue()
        self.sessions: list[tuple[bool, bool]] = []
        """Per message accepted: whether it came over TLS, and after a login."""

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if address in self.refuse:
            return "550 no such user here"
        if address in self.put_off:
            self.put_off.discard(address)
            return "450 4.2.0 greylisted: try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        over_tls = server.transport.get_extra_info("ssl_object") is not None
        self.sessions.append((over_tls, bool(session.authenticated)))
        self.messages.put(message)
        return "250 Message accepted"

    async def next_message(self) -> EmailMessage:
        """The next message accepted (waits for it, up to 10 s)."""
        return await asyncio.to_thread(self.messages.get, True, 10.0)


class Logins:
    """An aiosmtpd authenticator that takes one username and password; counts refusals."""

    def __init__(self, username: str, password: str) -> None:
        self.expected = (username.encode(), password.encode())
        self.refused = 0

    def __call__(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        if isinstance(data, LoginPassword) and (data.login, data.password) == self.expected:
            return AuthResult(success=True)
        self.refused += 1
        # handled=False: the server answers 535 itself.
        return AuthResult(success=False, handled=False)


class SMTPServer:
    """``options`` go to aiosmtpd's ``Controller``: ``ssl_context`` for TLS from the first
    byte; ``tls_context`` and ``require_starttls`` for STARTTLS; ``authenticator``..."""

    def __init__(self, mailbox: Mailbox, **options: Any) -> None:
        self.port = free_port()
        self.mailbox = mailbox
        self.controller = Controller(mailbox, hostname="127.0.0.1", port=self.port, **options)

    def __enter__(self) -> SMTPServer:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()

"""An aiosmtpd SMTP server on loopback that keeps the messages it accepts."""

from __future__ import annotations

import asyncio
import email
import email.policy
import queue
import socket
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


class Mailbox:
    """Accepts mail for any address except those in ``refuse`` (550)."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.refuse = refuse
        self.messages: queue.Queue[EmailMessage] = queue.Queue()

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if address in self.refuse:
            return "550 no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.messages.put(message)
        return "250 Message accepted"

    async def next_message(self) -> EmailMessage:
        """The next message accepted (waits for it, up to 10 s)."""
        return await asyncio.to_thread(self.messages.get, True, 10.0)


class SMTPServer:
    def __init__(self, mailbox: Mailbox) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(mailbox, hostname="127.0.0.1", port=self.port)

    def __enter__(self) -> SMTPServer:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()

"""A webhook receiver on loopback: a small HTTP/1.1 server that checks each delivery's
Standard Webhooks signature with the ``standardwebhooks`` package and keeps what came.

A request whose head holds a bare line break (a header line ending in ``\n`` alone) ends
the connection unanswered, as strict servers do with a head they cannot read one way only.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError
from tests.servers.loopback import HTTPServer

SECRET = "whsec_" + base64.b64encode(b"a receiver's test secret!").decode()


class Receiver(HTTPServer):
    """Answers each POST with ``status(delivery_number)`` (200 by default).

    ``deliveries`` holds ``(webhook-id, body)`` for every verified POST, in order;
    ``refused`` counts POSTs whose signature did not verify.
    """

    def __init__(
        self,
        secret: str = SECRET,
        status: Callable[[int], int] | None = None,
        *,
        before_reply: Callable[[int], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__()
        self.secret = secret
        self._verifier = Webhook(secret)
        self.status = status or (lambda n: 200)
        self.before_reply = before_reply
        self.headers: list[dict[str, str]] = []
        """The headers of every POST, in order (names in lower case)."""
        self.ids_seen: list[str] = []
        """The webhook-id of every POST, in order (answered or not)."""
        self.deliveries: list[tuple[str, dict[str, Any]]] = []
        self.attempts = 0
        self.refused = 0
        self._changed = asyncio.Condition()

    @property
    def url(self) -> str:
        return f"{self.origin}/hooks"

    async def wait_for(self, count: int) -> list[tuple[str, dict[str, Any]]]:
        """Wait until ``count`` verified deliveries have come."""
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.deliveries) >= count)
        return list(self.deliveries)

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        self.attempts += 1
        self.headers.append(headers)
        self.ids_seen.append(headers.get("webhook-id", ""))
        if self.before_reply is not None:
            await self.before_reply(self.attempts)
        status = self.status(self.attempts)
        if status < 300:
            try:
                payload = self._verifier.verify(body, headers)
            except WebhookVerificationError:
                self.refused += 1
                status = 401
            else:
                async with self._changed:
                    self.deliveries.append((headers["webhook-id"], payload))
                    self._changed.notify_all()
        return status, b""


def body_types(deliveries: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [body["type"] for _, body in deliveries]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)

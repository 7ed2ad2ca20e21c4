"""A webhook receiver on loopback: a small HTTP/1.1 server that checks each delivery's
Standard Webhooks signature with the ``standardwebhooks`` package and keeps what came."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError

SECRET = "whsec_" + base64.b64encode(b"a receiver's test secret!").decode()


class Receiver:
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
        self.secret = secret
        self._verifier = Webhook(secret)
        self.status = status or (lambda n: 200)
        self.before_reply = before_reply
        self.ids_seen: list[str] = []
        """The webhook-id of every POST, in order (answered or not)."""
        self.deliveries: list[tuple[str, dict[str, Any]]] = []
        self.attempts = 0
        self.refused = 0
        self._changed = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.url = ""

    async def __aenter__(self) -> Receiver:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/hooks"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    async def wait_for(self, count: int) -> list[tuple[str, dict[str, Any]]]:
        """Wait until ``count`` verified deliveries have come."""
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.deliveries) >= count)
        return list(self.deliveries)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.attempts += 1
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
                writer.write(f"HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n".encode())
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


def body_types(deliveries: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [body["type"] for _, body in deliveries]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)

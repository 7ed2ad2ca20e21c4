"""An ntfy server on loopback: takes JSON publishes and clears as ntfy 2.16 does.

A publish with a ``sequence_id`` already seen on its topic updates that notification in
place (the phone shows the newest); ``PUT /<topic>/<sequence id>/clear`` marks it read and
dismissed. Every request is kept as it came (method, path, headers, JSON body). A head
with a bare line break in a header line ends the connection, as a Go server reads such a
head otherwise than it was meant.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tests.servers.loopback import HTTPServer

RESERVED = frozenset(
    {"docs", "static", "file", "app", "metrics", "account", "settings", "signup", "login", "v1"}
)
"""The topics ntfy refuses to publish to (its default disallowed topics)."""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


class NtfyServer(HTTPServer):
    """Answers 200, or :attr:`status` for the requests whose method it names."""

    def __init__(self, *, clears: bool = True) -> None:
        super().__init__()
        self.requests: list[Request] = []
        self.shown: dict[tuple[str, str], dict[str, Any]] = {}
        """Per (topic, sequence id), the notification as the phone shows it now."""
        self.cleared: set[tuple[str, str]] = set()
        self.status: dict[str, int] = {}
        """Per method, the status to answer instead."""
        self.clears = clears
        """Whether the server knows clearing (2.16 and later); 404 otherwise."""
        self.before_reply: Callable[[int], Awaitable[None]] | None = None
        """Awaited with each request's number (from 1) once it is taken, before it is
        answered (a sender killed before it hears back)."""
        self._changed = asyncio.Condition()

    @property
    def url(self) -> str:
        return self.origin

    async def wait_for(self, count: int) -> list[Request]:
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.requests) >= count)
        return list(self.requests)

    def _take(self, request: Request) -> int:
        if request.method in self.status:
            return self.status[request.method]
        if request.method == "POST" and request.path == "/" and request.body is not None:
            if request.body["topic"] in RESERVED:
                return 400  # ntfy's 40010: a topic it keeps for itself
            key = (request.body["topic"], request.body.get("sequence_id", ""))
            self.shown[key] = request.body
            self.cleared.discard(key)
            return 200
        parts = request.path.strip("/").split("/")
        if request.method == "PUT" and len(parts) == 3 and parts[2] == "clear":
            if not self.clears:
                return 404
            self.cleared.add((parts[0], parts[1]))
            return 200
        return 404

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        request = Request(method, path, headers, json.loads(body) if body else None)
        async with self._changed:
            self.requests.append(request)
            number = len(self.requests)
            status = self._take(request)
            self._changed.notify_all()
        if self.before_reply is not None:
            await self.before_reply(number)
        return status, b'{"id":"m1"}'

"""A scripted HTTP server on loopback, the base of the vendor fakes.

It runs a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a thread, records every request,
and answers each with the next scripted :class:`Reply` once the vendor's ``check`` has let it
through (a vendor fake refuses there what the real API refuses). A streamed reply is sent
with chunked transfer encoding, each piece in its own chunk, so the client really reads it
piece by piece.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    pieces: list[bytes] | None = None
    """When set, the body is streamed: one chunk per piece."""

    @classmethod
    def json(
        cls, payload: Any, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> Reply:
        return cls(status=status, body=json.dumps(payload).encode(), headers=dict(headers or {}))

    @classmethod
    def stream(cls, pieces: Iterable[str]) -> Reply:
        return cls(content_type="text/event-stream", pieces=[piece.encode() for piece in pieces])


@dataclass
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def header(self, name: str) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


class FakeServer:
    """A loopback server answering from a script; a vendor fake overrides :meth:`check`."""

    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll keeps shutdown quick: serve_forever notices it between polls.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._server.server_port}"

    def queue(self, *replies: Reply) -> None:
        """Script the next answers, in order."""
        with self._lock:
            self.script.extend(replies)

    def check(self, request: Recorded) -> Reply | None:
        """A refusal for a request the real API would refuse; ``None`` to serve the script."""
        return None

    def answer(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            refusal = self.check(request)
            if refusal is not None:
                return refusal
            if not self.script:
                return Reply.json({"error": "the fake has no scripted reply left"}, status=599)
            return self.script.popleft()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class Sleeps:
    """A provider's sleep that records each requested wait and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def sse(events: Iterable[tuple[str | None, Any]]) -> Iterator[str]:
    """Server-sent events, one string per event; a non-string payload is sent as JSON."""
    for name, payload in events:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        head = f"event: {name}\n" if name else ""
        yield f"{head}data: {data}\n\n"


def split_evenly(pieces: Iterable[str], size: int) -> list[str]:
    """The same bytes cut every ``size`` characters, ignoring event boundaries."""
    text = "".join(pieces)
    return [text[start : start + size] for start in range(0, len(text), size)]


def _handler_for(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode(errors="replace")
            request = Recorded("POST", self.path, dict(self.headers.items()), body)
            self._send(fake.answer(request))

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.pieces is None:
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for piece in reply.pieces:
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read the recorded requests instead."""

    return Handler

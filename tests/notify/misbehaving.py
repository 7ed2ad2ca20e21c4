"""Webhook receivers on loopback that fail the ways receivers do: they answer 500, reset
the connection, answer something that is not HTTP, or speak TLS with a certificate no one
trusts. Each counts the requests it took."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct

import trustme
from tests.servers.loopback import LoopbackServer, read_request

GARBAGE = {
    "not-http": b"\x00\xffnot http at all\r\n\r\n" + bytes(range(256)),
    "bad-chunk": b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n",
    "odd-digits": "HTTP/1.1 \u00b2\u00b2\u00b2 OK\r\ncontent-length: 0\r\n\r\n".encode(),
    "long-head": b"HTTP/1.1 200 OK\r\nx-filler: " + b"x" * 200_000 + b"\r\n\r\n",
    "cut-short": b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\ncut short",
    "long-chunk-line": b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + b"1" * 200_000,
}
"""Answers that are not HTTP/1.1, by name."""


class Misbehaving(LoopbackServer):
    """A receiver that answers every request with ``how``: ``"500"``, ``"reset"``, a name
    in :data:`GARBAGE`, or ``"tls"`` (a TLS server whose certificate an authority made for
    the test signed: the client does not trust it)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.requests = 0

    def tls(self) -> ssl.SSLContext | None:
        if self.how != "tls":
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        trustme.CA().issue_cert("127.0.0.1").configure_cert(context)
        return context

    @property
    def url(self) -> str:
        return f"{self.origin}/hooks"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await read_request(reader)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            return
        self.requests += 1
        if self.how == "reset":
            sock = writer.get_extra_info("socket")
            # Linger with a zero timeout: closing sends a RST, not a FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        if self.how == "500":
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
        else:
            writer.write(GARBAGE[self.how])
        with contextlib.suppress(ConnectionError):
            await writer.drain()

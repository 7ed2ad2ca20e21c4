"""Asyncio servers on loopback, the base of the fakes that run on the tests' own loop.

:class:`LoopbackServer` listens on 127.0.0.1 (a free port, TLS when :meth:`tls` gives a
context), runs :meth:`serve` for each connection and closes every connection on exit.
:class:`HTTPServer` reads HTTP/1.1 requests one after another on a connection and writes
what :meth:`HTTPServer.answer` says to each.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Self


class LoopbackServer:
    """A server on 127.0.0.1; ``origin`` is its ``scheme://host:port`` once entered."""

    def __init__(self) -> None:
        self.origin = ""
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def tls(self) -> ssl.SSLContext | None:
        """The TLS context to serve with; ``None`` (plain TCP) by default."""
        return None

    async def __aenter__(self) -> Self:
        context = self.tls()
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0, ssl=context)
        port = self._server.sockets[0].getsockname()[1]
        self.origin = f"{'https' if context else 'http'}://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self.serve(reader, writer)
        finally:
            self._writers.discard(writer)
            writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Talk to one client until it leaves."""
        raise NotImplementedError


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
    """One HTTP/1.1 request: its method, path, headers (names in lower case) and body.

    Raises:
        ConnectionError: a line of the head ends in a bare line feed, which ends a header
            for a server written in Go (ntfy's): the connection is closed, as such a
            server's would be, rather than reading the request otherwise than it does.
    """
    head = await reader.readuntil(b"\r\n\r\n")
    if head.count(b"\n") != head.count(b"\r\n"):
        raise ConnectionError("a bare line feed in the request's head")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, path, headers, body


class HTTPServer(LoopbackServer):
    """Answers each request of a connection, in turn, with :meth:`answer`."""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                status, body = await self.answer(*await read_request(reader))
                head = f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\n\r\n"
                writer.write(head.encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        """The status and body to answer a request with."""
        raise NotImplementedError

"""A small HTTP/1.1 client for webhooks: keep-alive POSTs to one origin, nothing else.

A webhook is one POST whose answer only matters by its status, thousands a second to a
handful of receivers. A general client spends most of its time on what this does not need
(redirects, cookies, proxies, HTTP/2), so the notifier keeps idle connections per origin
and writes each request in one piece. The response's body is read (by its length, its
chunks, or to the end) and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from urllib.parse import urlsplit

__all__ = ["Origin"]

_MAX_HEAD = 64 * 1024
_MAX_BODY = 1024 * 1024
_NO_BODY = frozenset({204, 304})

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Origin:
    """Keep-alive POSTs to the origin of ``url`` (``http://`` or ``https://``).

    Args:
        url: the receiver; its path and query are the request target.
        timeout: seconds one exchange (connect, send, read the answer) may take.
        idle: connections kept open between requests.
    """

    def __init__(self, url: str, *, timeout: float, idle: int = 64) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http:// or https:// URL: {url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.authority = parts.netloc.rpartition("@")[2]
        self.tls = ssl.create_default_context() if parts.scheme == "https" else None
        self.timeout = timeout
        self._idle: list[Connection] = []
        self._keep = idle

    async def post(
        self,
        body: bytes,
        headers: dict[str, str],
        *,
        method: str = "POST",
        target: str | None = None,
    ) -> int:
        """POST ``body`` (or send it with ``method``) to the URL's path, or to ``target`` on the
        same origin; returns the status code.

        Raises:
            TimeoutError: the exchange took longer than ``timeout``.
            OSError: the receiver cannot be reached, closed the connection mid-answer, or
                answered with something that is not HTTP/1.1 (a :class:`ConnectionError`).
        """
        lines = [f"{method} {target or self.target} HTTP/1.1", f"host: {self.authority}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"content-length: {len(body)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        async with asyncio.timeout(self.timeout):
            while self._idle:
                # A kept connection the receiver has closed fails before any answer: the
                # request goes again on a fresh one (receivers drop repeats by webhook-id).
                connection = self._idle.pop()
                try:
                    return await self._exchange(connection, request)
                except (OSError, asyncio.IncompleteReadError):
                    pass
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.tls, server_hostname=self.host if self.tls else None
            )
            try:
                return await self._exchange((reader, writer), request)
            except asyncio.IncompleteReadError:
                raise ConnectionResetError(
                    "the receiver closed the connection mid-answer"
                ) from None

    async def _exchange(self, connection: Connection, request: bytes) -> int:
        """Send ``request`` on ``connection`` and read the answer; the connection is kept
        for the next request when it may carry one, and closed otherwise (whatever ends
        the exchange: an error, the timeout, a cancellation)."""
        reader, writer = connection
        try:
            writer.write(request)
            await writer.drain()
            while True:
                status, headers = await _read_head(reader)
                if status >= 200:
                    break
            reusable = await _read_body(reader, status, headers)
        except BaseException:
            _close(connection)
            raise
        if (
            reusable
            and headers.get("connection", "").lower() != "close"
            and len(self._idle) < self._keep
        ):
            self._idle.append(connection)
        else:
            _close(connection)
        return status

    async def aclose(self) -> None:
        """Close the idle connections."""
        idle, self._idle = self._idle, []
        for connection in idle:
            _close(connection)


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise _NotHttp("the receiver's answer has a head too long to read") from None
    if len(head) > _MAX_HEAD:
        raise _NotHttp("the receiver's answer has a head too long to read")
    first, *rest = head.decode("latin-1").split("\r\n")
    version, _, code = first.partition(" ")
    if not version.startswith("HTTP/1.") or not _is_number(code[:3]) or len(code[:3]) < 3:
        raise _NotHttp(f"the receiver did not answer in HTTP/1.1 ({first[:40]!r})")
    headers = {}
    for line in rest:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return int(code[:3]), headers


async def _read_body(reader: asyncio.StreamReader, status: int, headers: dict[str, str]) -> bool:
    """Read the answer's body and drop it; whether the connection may carry another."""
    if status in _NO_BODY:
        return True
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return await _read_chunks(reader)
        length = headers.get("content-length")
        if length is not None and _is_number(length):
            if int(length) > _MAX_BODY:
                return False
            await reader.readexactly(int(length))
            return True
        await reader.read(_MAX_BODY)  # an answer that ends with the connection
        return False
    except asyncio.LimitOverrunError:
        raise _NotHttp("the receiver's answer has a chunk header too long to read") from None


async def _read_chunks(reader: asyncio.StreamReader) -> bool:
    total = 0
    while True:
        line = (await reader.readuntil(b"\r\n")).split(b";")[0].strip()
        if not line or not all(c in b"0123456789abcdefABCDEF" for c in line):
            raise _NotHttp(f"the receiver's answer has a bad chunk size ({line[:20]!r})")
        size = int(line, 16)
        total += size
        if total > _MAX_BODY:
            return False
        await reader.readexactly(size + 2)
        if size == 0:
            return True


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


class _NotHttp(ConnectionError):
    """The receiver answered with something that is not HTTP/1.1."""


def _close(connection: Connection) -> None:
    with contextlib.suppress(Exception):
        connection[1].close()

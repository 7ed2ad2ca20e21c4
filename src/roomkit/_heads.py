"""A deadline for a request's head: the connection that never finishes its headers is closed.

uvicorn bounds neither a new connection that sends nothing nor a request head sent a byte at
a time: the app sees no request until the head is in, so nothing of roomkit can time it out,
and each such client holds a connection for as long as it likes (slowloris). The protocols
made here give each head :data:`HEAD_TIMEOUT` seconds (or the number passed), counted from
the connection opening and, on a kept-alive connection, from the end of the previous
response. Past it the connection is closed; when the client had sent part of its first head,
it gets a 408 first. A request whose head is in is not bounded here: its body is
(:mod:`roomkit.bodies`), and its response takes as long as it takes.

It works with either of uvicorn's HTTP/1.1 implementations, h11 and httptools (the one
``http="auto"`` picks when httptools is installed), by subclassing uvicorn's own protocol.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING

__all__ = ["HEAD_TIMEOUT", "head_timeout_protocol"]


HEAD_TIMEOUT = 10.0
"""Seconds a request's head (request line and headers) has to arrive whole, by default."""

_MESSAGE = (
    b"The request's headers did not arrive whole in time: send the request again, "
    b"all of its headers at once"
)
_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_MESSAGE)).encode("ascii") + b"\r\n"
    b"connection: close\r\n"
    b"\r\n" + _MESSAGE
)
"""Sent to a client whose first head was under way when its time ran out."""

if TYPE_CHECKING:
    # Both of uvicorn's protocols name what this reads alike (transport, loop, cycle); h11's
    # stands for either when checking types.
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Protocol
else:
    _Protocol = object


class _HeadDeadline(_Protocol):
    """Closes the connection when a request's head is not in within ``head_timeout``
    seconds of the connection opening or of the previous response ending."""

    head_timeout: float = HEAD_TIMEOUT
    _head_timer: asyncio.TimerHandle | None = None
    _head_awaited_after: object = None
    """The request whose response the awaited head follows (``None`` for the first)."""
    _head_begun = False
    """Whether bytes came in since the deadline was set (a head under way)."""

    def connection_made(  # type: ignore[override]  # as uvicorn's protocols narrow it
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_timer is None:
            return
        # A head is in once uvicorn starts a request for it, or hands the connection to its
        # WebSocket protocol.
        if self.cycle is not self._head_awaited_after or self.transport.get_protocol() is not self:
            self._stop_waiting()
        else:
            self._head_begun = True

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A connection kept alive awaits the next head, unless one came in meanwhile
        # (pipelined) and its response is under way.
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._stop_waiting()
        self._head_awaited_after = self.cycle
        self._head_begun = False
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_overdue)

    def _stop_waiting(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_overdue(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        # Only on a first request is a 408 sure to be read as the answer to the head under
        # way; on a kept-alive connection, closing is what the client retries on.
        if self._head_begun and self.cycle is None:
            self.transport.write(_TIMED_OUT)
        self.transport.close()


def head_timeout_protocol(http: object, seconds: float = HEAD_TIMEOUT) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol named by ``http`` (a ``uvicorn.Config(http=...)`` value:
    ``"auto"``, ``"h11"``, ``"httptools"``, or a subclass of either protocol class), with a
    deadline of ``seconds`` for each request's head; pass it as ``Config(http=...)``.

    Raises:
        ValueError: ``seconds`` is not a positive number, or ``http`` names a protocol other
            than h11 or httptools (use one of those to bound heads).
    """
    number = not isinstance(seconds, bool) and isinstance(seconds, int | float)
    if not number or not seconds > 0 or math.isinf(seconds):
        raise ValueError(f"the head timeout must be a positive number of seconds, got {seconds!r}")
    base = _protocol_class(http)
    # A protocol with a deadline already (a configuration served twice) gets the new one.
    bases = (base,) if issubclass(base, _HeadDeadline) else (_HeadDeadline, base)
    name = f"HeadDeadline{base.__name__.removeprefix('HeadDeadline')}"
    made: type[asyncio.Protocol] = type(name, bases, {"head_timeout": seconds})
    return made


def _protocol_class(http: object) -> type[asyncio.Protocol]:
    """The protocol class ``http`` names, one of uvicorn's h11 or httptools classes.

    Raises:
        ValueError: ``http`` is anything else.
    """
    if http == "auto":
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        return AutoHTTPProtocol
    if http == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    if http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return HttpToolsProtocol
    if isinstance(http, type) and issubclass(http, asyncio.Protocol):
        from uvicorn.protocols.http.h11_impl import H11Protocol

        if issubclass(http, H11Protocol) or _is_httptools(http):
            return http
    raise ValueError(
        f"a head timeout works with uvicorn's h11 or httptools protocol, got http={http!r}: "
        'pass http="auto", "h11" or "httptools"'
    )


def _is_httptools(kind: type[asyncio.Protocol]) -> bool:
    """Whether ``kind`` is uvicorn's httptools protocol or a subclass (False without
    httptools installed)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return False
    return issubclass(kind, HttpToolsProtocol)

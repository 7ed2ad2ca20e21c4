"""A TCP relay in front of a real redis-server that can lose a reply on purpose.

A command the server ran but whose reply never reached the client cannot be timed from
outside: the reply follows the write at once. The relay makes that moment exact. Armed with
:meth:`Relay.lose_reply_to`, it watches for the next command that mentions a marker (a
script call: ``EVALSHA``), reads the server's reply to it, drops the reply and cuts that
connection: the command ran, its client never hears. Everything else passes through
unchanged; while the server is down, the relay closes each new connection as the server's
refused port would. Armed with :meth:`Relay.call_before`, it calls a function (say, one that
freezes the server) just before it passes on the next command that mentions a marker; armed
with :meth:`Relay.hold`, it never passes that command on, and a test kills its client while
the write is on its way. Armed with :meth:`Relay.gate`, it holds every command that mentions
a marker until the test opens the gate: the calls stay unanswered, on a server that answers,
for as long as the test needs. It relays bytes and nothing else, so it stands as well in front of
a PostgreSQL server (whose statements' parameters travel as text).

Use it as an async context manager in front of a :class:`RedisServer`::

    async with Relay(server.port) as relay:
        store = RedisStore(relay.url)
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import warnings
from collections.abc import Callable
from types import TracebackType
from typing import Self

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

__all__ = ["Gate", "Relay", "decoding_client", "unclosed"]

_CHUNK = 65_536


class Gate:
    """Holds the commands that mention ``marker``, each on its connection, until opened."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self._held = 0
        self._changed = asyncio.Condition()
        self._open = asyncio.Event()

    async def holding(self, count: int) -> None:
        """Return once ``count`` commands have been held in all."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._held >= count)

    def open(self) -> None:
        """Pass on the commands held, and every one after them."""
        self._open.set()

    async def let_through(self) -> None:
        """Return once the gate is open: at once if it is, else counted as held."""
        if self._open.is_set():
            return
        async with self._changed:
            self._held += 1
            self._changed.notify_all()
        await self._open.wait()


class Relay:
    """Relays connections from a port of its own to the server's port on 127.0.0.1.

    Args:
        port: the server's port.
    """

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.port = 0
        self.lost = asyncio.Event()
        """Set once an armed relay has dropped a reply."""
        self.dropped = b""
        """The reply it dropped, as the server sent it."""
        self._marker: bytes | None = None
        self._before: tuple[bytes, Callable[[], None]] | None = None
        self._held: tuple[bytes, asyncio.Event] | None = None
        self._gate: Gate | None = None
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """The relay's URL, database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def lose_reply_to(self, marker: bytes) -> None:
        """Drop the reply to the next command that contains ``marker``, and cut its
        connection."""
        self.lost.clear()
        self._marker = marker

    def call_before(self, marker: bytes, action: Callable[[], None]) -> None:
        """Call ``action`` just before the next command that contains ``marker`` is passed
        on to the server."""
        self._before = (marker, action)

    def hold(self, marker: bytes) -> asyncio.Event:
        """Never pass on the next command that contains ``marker``; the event is set once
        it is held. Its connection stays open, the command unanswered, until the client
        goes."""
        held = asyncio.Event()
        self._held = (marker, held)
        return held

    def gate(self, marker: bytes) -> Gate:
        """Hold every command that contains ``marker`` (and what its connection sends after
        it) until the gate is opened."""
        self._gate = Gate(marker)
        return self._gate

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for pump in tuple(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            # The server is down: the client sees its connection closed.
            writer.close()
            return
        cut = asyncio.Event()
        doomed = asyncio.Event()
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer, cut, doomed, replies=False)),
            asyncio.create_task(self._pump(up_reader, writer, cut, doomed, replies=True)),
        ]
        self._pumps.update(pumps)
        try:
            await cut.wait()
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            self._pumps.difference_update(pumps)
            for end in (writer, up_writer):
                end.close()

    async def _pump(
        self,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        cut: asyncio.Event,
        doomed: asyncio.Event,
        *,
        replies: bool,
    ) -> None:
        try:
            while chunk := await source.read(_CHUNK):
                if replies and doomed.is_set():
                    # The reply to the marked command: the command ran, the client never hears.
                    self.dropped = chunk
                    self.lost.set()
                    return
                if not replies and self._held is not None and self._held[0] in chunk:
                    held, self._held = self._held[1], None
                    held.set()
                    await cut.wait()
                    return
                if not replies and self._gate is not None and self._gate.marker in chunk:
                    await self._gate.let_through()
                if not replies and self._before is not None and self._before[0] in chunk:
                    action, self._before = self._before[1], None
                    action()
                if not replies and self._marker is not None and self._marker in chunk:
                    self._marker = None
                    doomed.set()
                sink.write(chunk)
                await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(RuntimeError):
                cut.set()


def unclosed(port: int) -> list[str]:
    """The connections to ``port`` that the garbage collector finds still open."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    messages = [str(warning.message) for warning in caught]
    return [
        text
        for text in messages
        if text.startswith("unclosed Connection") and f"port={port}," in text
    ]


def decoding_client(url: str) -> Redis:
    """A client of ``url`` that decodes replies. A store reads bytes: beside this client it
    makes a pool of its own, with the client's settings (one more try here, as a store's own
    client makes), and owns it."""
    return Redis.from_url(url, decode_responses=True, retry=Retry(NoBackoff(), 1))

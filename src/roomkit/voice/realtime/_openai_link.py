"""One session's WebSocket to the OpenAI Realtime API, and what the provider tracks on it.

A :class:`Link` knows whether its session is still opening, open, closed by the provider or
lost; which function calls the model made and which of them still wait for a result; and
whether a response is running, so that ``response.create`` is never sent over one. The
provider reads events and calls the link's methods; the link only sends.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from roomkit.core.exceptions import ProviderError, ProviderTimeoutError
from roomkit.voice.realtime import _openai_events as events
from roomkit.voice.realtime.base import RealtimeSession

__all__ = ["Link"]

logger = logging.getLogger("roomkit.voice.realtime.openai")


class Link:
    """One session's WebSocket and the state of its conversation.

    Args:
        session: the session the socket carries.
        socket: the open WebSocket.
    """

    def __init__(self, session: RealtimeSession, socket: ClientConnection) -> None:
        self.session = session
        self.socket = socket
        self.reader: asyncio.Task[None] | None = None
        """The task reading the socket's events."""
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Done once the API applied the session's configuration, or failed to."""
        self._closing = False
        self._lost = False
        self._open_calls: dict[str, str] = {}
        self._taken: set[str] = set()
        self._responding = False
        self._requested = False
        self._respond_after = False

    def __str__(self) -> str:
        return f"session {self.session.id}"

    async def send(self, event: Mapping[str, Any]) -> None:
        """Send one client event.

        Raises:
            ProviderTimeoutError: the connection is closed or lost.
        """
        if self._closing or self._lost:
            raise ProviderTimeoutError(
                f"The connection of {self} to the OpenAI Realtime API is closed",
                provider=events.PROVIDER,
            )
        try:
            await self.socket.send(json.dumps(event))
        except ConnectionClosed as exc:
            raise ProviderTimeoutError(
                f"The connection of {self} to the OpenAI Realtime API closed: {exc}",
                provider=events.PROVIDER,
            ) from exc

    async def close(self) -> None:
        """Stop reading and close the socket; the session is not reported lost."""
        self._closing = True
        reader = self.reader
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        try:
            await self.socket.close()
        except Exception:
            logger.debug("Closing the socket of %s failed", self, exc_info=True)
        if not self.ready.done():
            # Closed while connect() still waits (the session was ended meanwhile): it fails
            # with a provider error, never a CancelledError its caller did not ask for.
            self.ready.set_exception(
                ProviderTimeoutError(
                    f"The connection of {self} to the OpenAI Realtime API was closed before "
                    "the session opened",
                    provider=events.PROVIDER,
                )
            )
        if not self.ready.cancelled():
            self.ready.exception()  # raised by connect(), if it still waits

    # -- the session's life -----------------------------------------------------------------

    def opened(self) -> None:
        """The API applied the session's configuration."""
        if not self.ready.done():
            self.ready.set_result(None)

    def error(self, error: ProviderError) -> bool:
        """The API reported ``error``. True when it failed the opening; once the session is
        open it is the session's to report."""
        # The API may have refused the last response.create: the next one is not held back.
        self._requested = False
        if self.ready.done():
            return False
        self.ready.set_exception(error)
        return True

    def ended(self, error: ProviderError) -> bool:
        """The connection ended. True when the session was open and is now lost; while it
        was still opening, its opening fails with ``error``."""
        if self._closing:
            return False
        if not self.ready.done():
            self.ready.set_exception(error)
            return False
        if self.ready.cancelled() or self.ready.exception() is not None:
            return False
        self._lost = True
        return True

    # -- calls and responses ----------------------------------------------------------------

    def take_call(self, call_id: str, response_id: str) -> bool:
        """Record the model's call ``call_id``, made in ``response_id``; False for a repeat."""
        if call_id in self._taken:
            return False
        self._taken.add(call_id)
        self._open_calls[call_id] = response_id
        return True

    def settle_call(self, call_id: str) -> bool:
        """The result of ``call_id`` went out. True when the model should respond now: no
        other call of the same response still waits for its result."""
        response_id = self._open_calls.pop(call_id, None)
        return response_id is None or response_id not in self._open_calls.values()

    def response_started(self) -> None:
        """A response is running."""
        self._responding = True
        self._requested = False

    async def response_done(self) -> None:
        """The running response is done; a response asked for meanwhile is asked for now."""
        self._responding = False
        if self._respond_after:
            self._respond_after = False
            await self.respond()

    async def respond(self) -> None:
        """Ask the model to respond, now or as soon as the running response is done."""
        if self._responding or self._requested:
            self._respond_after = True
            return
        self._requested = True
        await self.send(events.response_create())

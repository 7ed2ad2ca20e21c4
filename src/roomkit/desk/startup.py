"""The desk's start-up check: a desk does not start on a store it cannot reach.

A desk started on an unreachable store would look healthy and answer every request with a
503. :func:`check_stores` reads once through the handler and once from the kit's room
store, as any request would; :class:`StartupCheck` runs it when the ASGI server starts the
app and reports a failure as one line, after which the server exits. Outages after the
start are the routes' business: a 503 per request, while the store is away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roomkit.core.exceptions import StoreError, StoreUnavailableError
from roomkit.core.framework import RoomKit
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["CHECK_TIMEOUT", "StartupCheck", "check_stores"]

CHECK_TIMEOUT = 10.0
"""Seconds the stores have to answer the start-up check."""

_PROBE = "roomkit-desk-start-up-check"
"""An id no request has: reading it costs one round trip and finds nothing."""


async def check_stores(
    kit: RoomKit, handler: HumanInputHandler, *, timeout: float = CHECK_TIMEOUT
) -> None:
    """Read once from the request store and the room store.

    Raises:
        StoreError: a store cannot be reached (or did not answer within ``timeout``
            seconds); the message says which, and why.
    """
    try:
        async with asyncio.timeout(timeout):
            await handler.get_request(_PROBE)
            await kit.store.get_room(_PROBE)
    except TimeoutError:
        raise StoreUnavailableError(
            f"the desk's store did not answer within {timeout:g} s"
        ) from None


class StartupCheck:
    """ASGI middleware that runs ``check`` when the server starts the app.

    A failed check answers the server's start-up with one line (the store error's
    message) and the app never starts; otherwise the app's own start-up goes on.
    """

    def __init__(self, app: ASGIApp, *, check: Callable[[], Awaitable[None]]) -> None:
        self.app = app
        self.check = check

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        first = await receive()
        if first["type"] == "lifespan.startup":
            try:
                await self.check()
            except StoreError as error:
                line = f"The desk cannot start: {error}"
                await send({"type": "lifespan.startup.failed", "message": line})
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await self.app(scope, replay, send)

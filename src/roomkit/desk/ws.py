"""The desk's WebSocket: authenticate, send the snapshot, then push as requests move.

The upgrade is refused (403) with a ``Host`` that is not one of the desk's names (see
:class:`~roomkit.desk.limits.HostRule`) or from an origin that is not allowed: with both
checks, a page that DNS rebinding put on the desk's address cannot open the socket, although
its origin matches the ``Host`` it sends. The client's first frame
must be ``{"type": "auth", "token": ...}`` within the auth timeout (tokens never travel in
URLs: a socket opened with a ``token`` or ``access_token`` query parameter is closed at once
with 1008 and :data:`TOKEN_IN_URL`). The server answers with ``{"type": "snapshot",
"requests": [...]}`` and then pushes ``question_pending``, ``question_settled`` and
``room_message`` frames. Frames from the client past the size cap close the socket with 1009;
other frames are ignored, each spending a request of its person's rate limit: past the limit
the socket is closed with 1008 and :data:`FLOODED`. A first
frame that is not a well-formed auth frame (however malformed or deeply nested: it is read
by :func:`roomkit.bodies.load_json` under the desk's limits) closes it with 1008, and so
does a spent or revoked link or token, once the hub sees it (see
:mod:`roomkit.desk.hub`), with the reason (``This answer link was already used``, ``This
token was revoked``). A client that falls too far behind is closed with 1013 and reconnects
for a new snapshot. A client that reads nothing at all (a stalled tab, a hostile script) is
cut off: a send that waits longer than the send timeout (:attr:`DeskLimits.send_timeout
<roomkit.desk.limits.DeskLimits.send_timeout>`) on a client whose buffers are full ends its
session, frees its place, logs one warning, and aborts its connection (under uvicorn; see
:mod:`roomkit.desk._transport`) rather than closing it, since a close frame would wait behind
everything the client has not read. Every client has a writer of its own: one that reads
nothing holds up no one else's pushes. Each open request a snapshot or a push delivers to a
person (not an administrator) is recorded in its history as ``shown`` on the ``websocket``
surface, once (see :meth:`~roomkit.desk.hub.DeskHub.record_shown`). A person holds at most
:attr:`DeskLimits.sockets_per_person <roomkit.desk.limits.DeskLimits.sockets_per_person>`
sockets at once and the desk at most :attr:`DeskLimits.sockets
<roomkit.desk.limits.DeskLimits.sockets>` in all (see :mod:`roomkit.desk.places`): one more,
once authenticated, is closed with 1008 (the person's cap) or 1013 (the desk's) and the
reason, and logged as one warning; the sockets already open stay. No frame ends the session
with an unhandled exception: a fault of the desk itself is logged and closes with 1011.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Collection
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from roomkit.auth.door import TOO_MANY
from roomkit.auth.gate import Use
from roomkit.bodies import BodyRefusedError, load_json
from roomkit.core.exceptions import StoreError
from roomkit.desk._transport import abort, session_transport
from roomkit.desk.auth import Principal
from roomkit.desk.hub import DeskHub, Watcher
from roomkit.desk.limits import DeskLimits, origin_allowed
from roomkit.desk.places import NoPlaceError, Places

__all__ = ["serve_socket"]

logger = logging.getLogger("roomkit.desk")

POLICY = 1008
TOO_BIG = 1009
INTERNAL = 1011
TRY_AGAIN = 1013
SURFACE = "websocket"
"""The surface of the requests the socket shows, in their history's ``shown`` entries."""


TOKEN_IN_URL = 'A token goes in the first frame, {"type": "auth", "token": ...}, never in the URL'
"""Why a socket opened with a token in its URL's query is closed: URLs are logged."""
FLOODED = "Too many frames: the desk reads only the auth frame, send nothing after it"
"""Why a socket that sends frames faster than its person's rate limit is closed."""
_URL_TOKENS = frozenset({"token", "access_token"})
"""The query parameters a client puts a token in by mistake."""


MAX_REASON_BYTES = 123
"""The most a close frame's reason holds (RFC 6455: 125 bytes of payload, 2 of them the
code); a longer reason fails the close itself."""


def close_reason(message: str) -> str:
    """``message`` as a close frame holds it: whole when it fits, else its head (the part
    before the first colon, which says what happened), cut to the limit if still too long."""
    if len(message.encode("utf-8")) <= MAX_REASON_BYTES:
        return message
    head = message.partition(":")[0].encode("utf-8")[:MAX_REASON_BYTES]
    return head.decode("utf-8", errors="ignore")


class _Closed(Exception):
    """The session ends: close with this code and reason (as a close frame holds it)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = close_reason(reason)


class _Stalled(Exception):
    """A send to the client waited past the send timeout: it reads nothing, cut it off."""

    def __init__(self, actor_id: str) -> None:
        super().__init__(actor_id)
        self.actor_id = actor_id


async def _send(websocket: WebSocket, text: str, watcher: Watcher, timeout: float) -> None:
    """Send a frame, or raise :class:`_Stalled` when it cannot go out within ``timeout``."""
    try:
        async with asyncio.timeout(timeout):
            await websocket.send_text(text)
    except TimeoutError:
        raise _Stalled(watcher.principal.actor_id) from None


def _frame_text(message: Any, cap: int) -> str | None:
    """The text of a received frame, ``None`` at a disconnect; raises past the cap."""
    if message["type"] == "websocket.disconnect":
        return None
    text = message.get("text")
    data: bytes | None = message.get("bytes")
    size = len(data) if data is not None else len(text.encode("utf-8")) if text else 0
    if size > cap:
        raise _Closed(TOO_BIG, "Frame too big")
    if text is None and data is not None:
        return data.decode("utf-8", errors="replace")
    return text or ""


async def _authenticate(websocket: WebSocket, hub: DeskHub, limits: DeskLimits) -> Principal:
    try:
        async with asyncio.timeout(limits.auth_timeout):
            text = _frame_text(await websocket.receive(), limits.max_frame)
    except TimeoutError:
        raise _Closed(POLICY, "No auth frame in time") from None
    if text is None:
        raise WebSocketDisconnect
    try:
        frame = load_json(text, limits.frames, what="The frame")
    except BodyRefusedError:
        frame = None
    token = frame.get("token") if isinstance(frame, dict) and frame.get("type") == "auth" else None
    if not isinstance(token, str) or not token:
        raise _Closed(POLICY, 'The first frame must be {"type": "auth", "token": ...}')
    try:
        principal = await hub.gate.admit(token, Use.DESK)
    except PermissionError as refused:
        raise _Closed(POLICY, str(refused)) from None
    if hub.gate.spend(principal) > 0:
        raise _Closed(TRY_AGAIN, TOO_MANY)
    return principal


async def _read(websocket: WebSocket, hub: DeskHub, principal: Principal, cap: int) -> None:
    """Drain the client's frames (ignored) until it leaves, sends one too big, or sends
    them faster than its person's rate limit allows (each spends a request of it)."""
    while _frame_text(await websocket.receive(), cap) is not None:
        if hub.gate.spend(principal) > 0:
            raise _Closed(POLICY, FLOODED)


async def _write(websocket: WebSocket, hub: DeskHub, watcher: Watcher, timeout: float) -> None:
    """Send the watcher's frames as they come, until it is dropped or closed."""
    while True:
        frames = await watcher.pull()
        if watcher.dropped:
            raise _Closed(TRY_AGAIN, "Too far behind: reconnect")
        for frame in frames:
            await _send(websocket, frame, watcher, timeout)
        await hub.record_shown(watcher.principal, watcher.shown, SURFACE)
        if watcher.closed is not None:
            raise _Closed(POLICY, watcher.closed)


async def _session(
    websocket: WebSocket, hub: DeskHub, limits: DeskLimits, places: Places | None
) -> None:
    principal = await _authenticate(websocket, hub, limits)
    if places is None:
        await _watch(websocket, hub, limits, principal)
        return
    try:
        places.take(principal.actor_id)
    except NoPlaceError as full:
        logger.warning(
            "The desk refused a WebSocket of %s: %s",
            principal.actor_id,
            full.reason,
            extra={"event": "websocket_refused", "actor": principal.actor_id},
        )
        raise _Closed(TRY_AGAIN if full.everyone else POLICY, full.reason) from None
    try:
        await _watch(websocket, hub, limits, principal)
    finally:
        places.give_back(principal.actor_id)


async def _watch(
    websocket: WebSocket, hub: DeskHub, limits: DeskLimits, principal: Principal
) -> None:
    watcher = await hub.join(principal)
    try:
        snapshot = await hub.snapshot(principal)
        frame = json.dumps({"type": "snapshot", "requests": snapshot})
        await _send(websocket, frame, watcher, limits.send_timeout)
        await hub.record_shown(principal, [view["id"] for view in snapshot], SURFACE)
        expires = principal.expires_at
        remaining = None if expires is None else max(0.0, expires - time.time())
        tasks = [
            asyncio.create_task(_read(websocket, hub, principal, limits.max_frame)),
            asyncio.create_task(_write(websocket, hub, watcher, limits.send_timeout)),
        ]
        try:
            done, _ = await asyncio.wait(
                tasks, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if not done:
            raise _Closed(POLICY, "Token expired")
        for task in done:
            task.result()
    finally:
        hub.leave(watcher)


async def serve_socket(
    websocket: WebSocket,
    hub: DeskHub,
    limits: DeskLimits,
    *,
    allowed_origins: Collection[str] | None = None,
    places: Places | None = None,
) -> None:
    """Run one client's session on the desk's WebSocket.

    ``places`` counts the open sockets against the caps of ``limits`` (one more over a cap
    is closed once authenticated); ``None`` counts none.
    """
    host = websocket.headers.get("host")
    if not hub.gate.hosts.allows(host, websocket.scope.get("server")) or not origin_allowed(
        websocket.headers.get("origin"), host, allowed_origins
    ):
        # Closing before accepting refuses the upgrade with 403.
        await websocket.close(code=POLICY)
        return
    await websocket.accept()
    # Found from the session's own task, before any task of its own runs.
    transport = session_transport()
    timeout = limits.send_timeout
    if _URL_TOKENS.intersection(websocket.query_params):
        # Said at once, not after the auth timeout: the client learns where the token goes.
        await _close(websocket, transport, POLICY, TOKEN_IN_URL, timeout)
        return
    try:
        await _session(websocket, hub, limits, places)
    except _Stalled as stalled:
        _cut_off(transport, stalled.actor_id, timeout)
    except _Closed as closing:
        await _close(websocket, transport, closing.code, closing.reason, timeout)
    except StoreError as error:
        hub.metrics.store_error()
        logger.warning(
            "The desk could not reach the request store: %s", error, extra={"event": "store_error"}
        )
        await _close(websocket, transport, TRY_AGAIN, "Store unavailable: reconnect", timeout)
    except (WebSocketDisconnect, OSError):
        # The client left (or the transport broke) mid-send: nothing more to say.
        return
    except Exception:
        logger.exception("The desk's WebSocket session failed")
        await _close(websocket, transport, INTERNAL, "Internal error: reconnect", timeout)


async def _close(
    websocket: WebSocket,
    transport: asyncio.Transport | None,
    code: int,
    reason: str,
    timeout: float,
) -> None:
    """Close with ``code``; a close frame that cannot go out in time (the client reads
    nothing) gives way to aborting the connection."""
    try:
        async with asyncio.timeout(timeout):
            await websocket.close(code=code, reason=reason)
    except TimeoutError:
        if transport is not None:
            abort(transport)
    except Exception:
        # The client is gone already, or the server refuses a close now: nothing to say.
        return


def _cut_off(transport: asyncio.Transport | None, actor_id: str, timeout: float) -> None:
    """Abort the connection of a client that reads nothing (its session has ended)."""
    logger.warning(
        "The desk cut off a WebSocket client of %s that read nothing for %g s",
        actor_id,
        timeout,
        extra={"event": "websocket_stalled", "actor": actor_id},
    )
    if transport is not None:
        # Not close(): that waits for the buffer the client does not read to drain.
        abort(transport)

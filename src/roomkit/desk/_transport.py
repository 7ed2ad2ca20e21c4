"""The connection under a WebSocket session, to cut off a client that stopped reading.

ASGI gives an application no way to drop a connection at once: a ``websocket.close`` is a
close frame written behind everything the client has not read, and a server that closes a
connection lets its buffer drain first. For a client that reads nothing (a stalled tab, a
hostile script) both wait until TCP gives up, minutes or hours later. The desk cuts such a
client off by aborting the connection's transport, which it finds here, with a reset: the
kernel drops what it still held for the client at once, rather than keep trying to deliver
it after the socket is closed.

uvicorn runs each WebSocket connection's application in a task of its own, started from the
connection protocol's ``run_asgi()``; that protocol holds the connection's
:class:`asyncio.Transport` as ``transport`` (so do all three of uvicorn's WebSocket
implementations). Read from the task that runs the session, it is found whatever middleware
or mount stands between the server and the desk. Under another server, or when a middleware
runs the application in a task of its own, there is none: the session still ends, and the
server closes the connection its own way.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import socket
import struct

__all__ = ["abort", "session_transport"]

_RESET = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on with no time to linger: closing the socket resets the connection."""


def session_transport() -> asyncio.Transport | None:
    """The transport of the connection whose task calls this, ``None`` when not found."""
    task = asyncio.current_task()
    coroutine = task.get_coro() if task is not None else None
    if not inspect.iscoroutine(coroutine) or coroutine.cr_code.co_name != "run_asgi":
        return None
    owner = inspect.getcoroutinelocals(coroutine).get("self")
    transport = getattr(owner, "transport", None)
    return transport if isinstance(transport, asyncio.Transport) else None


def abort(transport: asyncio.Transport) -> None:
    """Drop the connection at once: reset it, discarding whatever the client has not read."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
    transport.abort()

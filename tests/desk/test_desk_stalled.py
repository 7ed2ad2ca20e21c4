"""A desk WebSocket client that stops reading is cut off, and holds up no one else."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from desk_harness import ROOMY, World, next_frame, serve, socket_for, token

from roomkit.desk import DeskLimits

QUESTION = "Which colour? " + "x" * 4000
"""Big enough that a few hundred pushes fill the buffers between the desk and a client."""
MOST_QUESTIONS = 5_000
"""A hang guard: far more than the buffers on loopback hold."""


def _masked_text(payload: bytes) -> bytes:
    """A client's text frame (clients mask theirs)."""
    mask = os.urandom(4)
    length = len(payload)
    # FIN + text; the mask bit with the length (two more bytes of it past 125).
    if length < 126:
        head = bytes([0x81, 0x80 | length])
    else:
        head = bytes([0x81, 0x80 | 126]) + length.to_bytes(2, "big")
    return head + mask + bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))


@asynccontextmanager
async def stalled_client(base: str, actor: str) -> AsyncIterator[socket.socket]:
    """A client that opens the desk's WebSocket as ``actor``, then reads nothing more (its
    receive buffer kept small, so that the desk's sends back up sooner)."""
    loop = asyncio.get_running_loop()
    port = int(base.rsplit(":", 1)[1])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        upgrade = (
            f"GET /api/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        await loop.sock_sendall(sock, upgrade.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += await loop.sock_recv(sock, 1)
        assert response.startswith(b"HTTP/1.1 101"), response
        auth = json.dumps({"type": "auth", "token": token(actor)}).encode()
        await loop.sock_sendall(sock, _masked_text(auth))
        yield sock


async def reset(sock: socket.socket) -> bool:
    """Read what the client was sent until its connection ends: True when the desk reset it
    (cut off), False when it closed it."""
    loop = asyncio.get_running_loop()
    try:
        while await loop.sock_recv(sock, 1 << 20):
            pass
    except ConnectionResetError:
        return True
    return False


class Stalls(logging.Handler):
    """Sets ``cut_off`` when the desk logs that it cut off a client that stopped reading."""

    def __init__(self) -> None:
        super().__init__()
        self.cut_off = asyncio.Event()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "event", None) == "websocket_stalled":
            self.records.append(record)
            self.cut_off.set()


@asynccontextmanager
async def watching_stalls() -> AsyncIterator[Stalls]:
    stalls = Stalls()
    desk_log = logging.getLogger("roomkit.desk")
    desk_log.addHandler(stalls)
    try:
        yield stalls
    finally:
        desk_log.removeHandler(stalls)


async def test_a_client_that_stops_reading_is_cut_off_and_others_get_every_push() -> None:
    """The desk's sends to a client that reads nothing back up; past the send timeout its
    connection is reset and its place freed (in the hub and in the server's connection limit),
    while a reading client gets every push."""
    world = World(limits=DeskLimits(rate=ROOMY.rate, burst=ROOMY.burst, send_timeout=0.25))
    await world.room("room", "alice", "bob")
    hub = world.app.state.desk_hub
    asked: list[str] = []
    received: list[str] = []
    async with (
        watching_stalls() as stalls,
        # The server's limit counts every connection open; a WebSocket upgrade passes it, an
        # HTTP request over it gets 503. Three: two sockets and the request below.
        serve(world.app, limit_concurrency=3) as base,
        socket_for(base, "alice") as (healthy, _),
        stalled_client(base, "alice") as stalled,
    ):
        while not stalls.cut_off.is_set():
            assert len(asked) < MOST_QUESTIONS, "the client that reads nothing was never cut off"
            asked.append(await world.ask({"question": QUESTION}, actor_id="alice"))
            received.append((await next_frame(healthy, "question_pending"))["request"]["id"])
        assert hub.clients == 1, "the cut-off client's place is free"
        assert await reset(stalled)
        async with httpx.AsyncClient() as client:
            figures = await client.get(f"{base}/metrics")
        assert figures.status_code == 200, "the cut-off client's connection is gone"
        assert "roomkit_websocket_clients 1.0" in figures.text
        asked.append(await world.ask({"question": "And now?"}, actor_id="alice"))
        received.append((await next_frame(healthy, "question_pending"))["request"]["id"])
    assert received == asked
    assert len(stalls.records) == 1
    assert stalls.records[0].levelno == logging.WARNING

"""A request head that never arrives whole (slowloris) holds no connection of a real server:
past ``head_timeout`` the server closes it, with a 408 when part of a first head came, on
either of uvicorn's HTTP implementations; a head that does arrive in time is served."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import uvicorn
from desk_harness import World, bearer, socket_for

from roomkit.desk import DeskLimits
from roomkit.desk.serving import Server, listen

BACKSTOP = 30.0
"""How long the test waits for the server to close before it calls the connection held."""
QUICK = 0.5
"""A head timeout that keeps the tests fast."""
ROOMY_HEAD = 30.0
"""A head timeout no head sent in pieces on a busy machine comes near."""
HEAD = b"GET /api/me HTTP/1.1\r\nHost: 127.0.0.1\r\n"
"""The start of a head: its blank line never comes."""


def implementations() -> list[str]:
    """uvicorn's HTTP implementations installed here (httptools is optional)."""
    try:
        import httptools  # noqa: F401  # only its presence matters
    except ImportError:
        return ["h11"]
    return ["h11", "httptools"]


@pytest.fixture(params=implementations())
def http(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def desk(http: str, head_timeout: float) -> AsyncIterator[tuple[str, int]]:
    """A desk served by roomkit's server on a free loopback port; yields host and port."""
    app = World().app
    started = asyncio.Event()
    with listen("127.0.0.1", 0) as sock:
        config = uvicorn.Config(app, http=http, log_config=None, lifespan="on")
        server = Server(config, on_started=started.set, head_timeout=head_timeout)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            await started.wait()
            yield "127.0.0.1", sock.getsockname()[1]
        finally:
            server.should_exit = True
            await task


async def until_closed(reader: asyncio.StreamReader) -> bytes:
    """All the server sends until it closes the connection."""
    try:
        return await asyncio.wait_for(reader.read(), BACKSTOP)
    except TimeoutError:
        pytest.fail("the server still holds a connection whose head never came")


async def response(reader: asyncio.StreamReader) -> bytes:
    """One response with a ``content-length``, read off a kept-alive connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


def request_for(actor: str) -> bytes:
    (name, value), *_ = bearer(actor).items()
    return HEAD + f"{name}: {value}\r\n\r\n".encode()


async def test_a_head_that_never_ends_gets_408_and_its_connection_closes(http: str) -> None:
    async with desk(http, QUICK) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(HEAD)
            await writer.drain()
            reply = (await until_closed(reader)).decode()
        finally:
            writer.close()
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            me = await client.get("/api/me", headers=bearer("alice"))
    assert reply.startswith("HTTP/1.1 408 "), reply
    assert "send the request again, all of its headers at once" in reply
    assert "connection: close" in reply.lower()
    assert me.json() == {"actor_id": "alice", "admin": False}


async def test_a_connection_that_sends_nothing_is_closed(http: str) -> None:
    async with desk(http, QUICK) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            assert await until_closed(reader) == b""
        finally:
            writer.close()


async def test_a_kept_alive_connection_whose_next_head_never_ends_is_closed(http: str) -> None:
    """The next head's time counts from the response before it; a client retries on the close."""
    async with desk(http, QUICK) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(request_for("alice"))
            await writer.drain()
            first = await response(reader)
            writer.write(HEAD)
            await writer.drain()
            rest = await until_closed(reader)
        finally:
            writer.close()
    assert first.startswith(b"HTTP/1.1 200 "), first
    assert rest == b""


async def test_a_head_sent_in_pieces_within_the_limit_is_served(http: str) -> None:
    """Each piece reaches the server before the next is sent: a round trip on another
    connection lies between them."""
    async with desk(http, ROOMY_HEAD) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        whole = request_for("alice")
        pieces = [whole[i : i + 16] for i in range(0, len(whole), 16)]
        try:
            async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as other:
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                    assert (await other.get("/api/me", headers=bearer("bob"))).status_code == 200
            reply = await response(reader)
        finally:
            writer.close()
    assert reply.startswith(b"HTTP/1.1 200 "), reply
    assert reply.endswith(b'{"actor_id":"alice","admin":false}')


async def test_a_websocket_outlives_the_head_timeout(http: str) -> None:
    """Once upgraded, a WebSocket is no request awaiting its head: it stays open."""
    async with (
        desk(http, QUICK) as (host, port),
        socket_for(f"http://{host}:{port}", "alice") as (
            ws,
            _,
        ),
    ):
        # A connection opened after the WebSocket's, closed at its own deadline: the
        # WebSocket's would have passed before it.
        reader, writer = await asyncio.open_connection(host, port)
        try:
            assert await until_closed(reader) == b""
        finally:
            writer.close()
        await asyncio.wait_for(await ws.ping(), BACKSTOP)


def test_a_head_timeout_must_be_a_positive_number() -> None:
    for wrong in (0, -1.0, float("inf"), float("nan"), True, "10"):
        with pytest.raises(ValueError, match="head_timeout must be a positive number"):
            DeskLimits(head_timeout=wrong)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="head timeout must be a positive number"):
            Server(uvicorn.Config(World().app), on_started=lambda: None, head_timeout=wrong)  # type: ignore[arg-type]


def test_a_head_timeout_needs_h11_or_httptools() -> None:
    config = uvicorn.Config(World().app, http="example.protocols:Custom")
    with pytest.raises(ValueError, match='pass http="auto", "h11" or "httptools"'):
        Server(config, on_started=lambda: None)


def test_heads_have_ten_seconds_by_default() -> None:
    assert DeskLimits().head_timeout == 10.0

"""``roomkit desk`` and the demo as a newcomer starts them: the link to open, a taken port."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roomkit.cli import main
from roomkit.desk import demo as demo_module
from roomkit.desk.serving import sign_in_link


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_DESK_DATA", "PORT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


async def test_roomkit_desk_prints_a_link_that_signs_in(tmp_path: Path) -> None:
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0",
        "--data-dir", str(tmp_path), "--log-level", "warning",
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert desk.stdout is not None
        line = (await desk.stdout.readline()).decode()
        found = re.fullmatch(r"Open (http://127\.0\.0\.1:\d+)/#token=(\S+)\n", line)
        assert found, line
        base, link = found.groups()
        async with httpx.AsyncClient(base_url=base) as client:
            traded = await client.post("/api/sign-in", headers={"Authorization": f"Bearer {link}"})
            token = traded.json()["token"]
            me = await client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
            page = await client.get("/")
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
    assert me.json() == {"actor_id": "admin", "admin": True}
    assert "Answer desk" in page.text
    assert desk.returncode == 0


def test_roomkit_desk_says_when_its_port_is_taken(
    taken_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["desk", "--port", str(taken_port), "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"roomkit: Cannot start the desk: port {taken_port} is in use: pass --port\n"
    )


def test_the_demo_says_when_its_port_is_taken(
    taken_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert demo_module.main(["--port", str(taken_port), "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"Cannot start the demo: port {taken_port} is in use: pass --port (make demo PORT=...)\n"
    )


def test_the_demo_port_flag_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    printed: list[str] = []

    def print_then_interrupt(text: str, **options: object) -> None:
        printed.append(text)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(demo_module, "print", print_then_interrupt, raising=False)
    monkeypatch.setenv("PORT", "not a port")
    assert demo_module.main(["--port", "0", "--data-dir", str(tmp_path / "data")]) == 0
    assert re.match(r"Open http://127\.0\.0\.1:\d+/#token=", printed[0])


@pytest.mark.parametrize(
    ("host", "link"),
    [
        ("127.0.0.1", "http://127.0.0.1:8765/#token=t"),
        ("0.0.0.0", "http://127.0.0.1:8765/#token=t"),
        ("::", "http://[::1]:8765/#token=t"),
        ("desk.example", "http://desk.example:8765/#token=t"),
    ],
)
def test_the_sign_in_link_opens_on_an_address_a_browser_can_reach(host: str, link: str) -> None:
    assert sign_in_link(host, 8765, "t") == link


async def test_each_connection_to_the_listening_socket_sends_without_delay() -> None:
    """asyncio sets TCP_NODELAY on the connections of ``listen()``'s socket, as uvicorn serves
    them: no answer waits for the client's delayed ACK of the one before (~40 ms each)."""
    from roomkit.desk.serving import listen

    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Peek(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    sock = listen("127.0.0.1", 0)
    server = await asyncio.get_running_loop().create_server(Peek, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname())
        try:
            nodelay = await accepted
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
    assert nodelay != 0


async def test_roomkit_desk_stops_on_sigterm_with_a_socket_that_reads_nothing(
    tmp_path: Path,
) -> None:
    """A WebSocket client that never reads, and a request whose body never ends, hold
    connections open; SIGTERM still stops the desk once the grace period is over."""
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0",
        "--data-dir", str(tmp_path), "--log-level", "warning",
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    writers: list[asyncio.StreamWriter] = []
    try:
        assert desk.stdout is not None
        line = (await desk.stdout.readline()).decode()
        found = re.fullmatch(r"Open http://(127\.0\.0\.1):(\d+)/#token=(\S+)\n", line)
        assert found, line
        host, port, link = found.groups()
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
            traded = await client.post("/api/sign-in", headers={"Authorization": f"Bearer {link}"})
        token = traded.json()["token"]
        # A WebSocket that authenticates, then never reads what the desk sends.
        reader, writer = await asyncio.open_connection(host, int(port))
        writers.append(writer)
        writer.write(
            f"GET /api/ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
        writer.write(_masked_text_frame(json.dumps({"type": "auth", "token": token})))
        # A request whose body never finishes arriving.
        _, uploading = await asyncio.open_connection(host, int(port))
        writers.append(uploading)
        uploading.write(
            f"POST /api/sign-in HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Content-Length: 1000\r\n\r\n{".encode()
        )
        await asyncio.gather(writer.drain(), uploading.drain())
        await _served_by(host, int(port))
        desk.send_signal(signal.SIGTERM)
        # A hang guard, far past the grace period: the desk must exit on its own.
        async with asyncio.timeout(30):
            await desk.communicate()
    finally:
        if desk.returncode is None:
            desk.kill()
            await desk.communicate()
        for open_writer in writers:
            open_writer.close()
    assert desk.returncode == 0


async def _served_by(host: str, port: int) -> None:
    """Wait until the desk has answered one more request (the connections above are in)."""
    async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as client:
        assert (await client.get("/")).status_code == 200


def _masked_text_frame(text: str) -> bytes:
    """A client's text frame (masked, as RFC 6455 requires of clients), under 64 KiB."""
    payload = text.encode()
    mask = b"\x01\x02\x03\x04"
    length = len(payload)
    if length < 126:
        header = bytes([0x81, 0x80 | length])
    else:
        header = bytes([0x81, 0xFE]) + length.to_bytes(2, "big")
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

"""A body that never arrives whole (slowloris) holds no connection of a real server for long:
past ``DeskLimits.body_timeout`` it gets 408 saying what to do, and its connection closes."""

from __future__ import annotations

import asyncio

import pytest
from desk_harness import ROOMY, SECRET, World, serve, token
from tests.notify.slack_api import SIGNING_SECRET

from roomkit.bodies import BodyLimits
from roomkit.desk import DeskLimits, issue_sign_in_link
from roomkit.notify import Directory, Person

QUICK = DeskLimits(rate=ROOMY.rate, burst=ROOMY.burst, body_timeout=0.2)
"""Limits that wait a fifth of a second for a body."""
BACKSTOP = 30.0
"""How long the test waits for the server's answer before it calls the connection held."""


async def exchange(base: str, request: bytes) -> bytes:
    """Send ``request`` (a head and the start of a body) and read all the server says until
    it closes the connection."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        try:
            return await asyncio.wait_for(reader.read(), BACKSTOP)
        except TimeoutError:
            pytest.fail("the server still holds a connection whose body never came")
    finally:
        writer.close()


def head(path: str, *, framing: str, content_type: str = "application/json") -> bytes:
    # Signing in takes a sign-in link: anything else is refused before the body is read.
    credential = issue_sign_in_link(SECRET, "alice") if path == "/api/sign-in" else token("alice")
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {credential}\r\nContent-Type: {content_type}\r\n"
        f"{framing}\r\n\r\n"
    ).encode()


FRAMINGS = {
    # Says 100 bytes and sends 11.
    "content-length": ("Content-Length: 100", b'{"answer": '),
    # Sends a chunk, and never the last one.
    "chunked": ("Transfer-Encoding: chunked", b'b\r\n{"answer": \r\n'),
}


@pytest.mark.parametrize("framing", list(FRAMINGS))
async def test_a_body_that_never_comes_whole_gets_408_and_its_connection_closes(
    framing: str,
) -> None:
    world = World(
        limits=QUICK,
        chat_channel_id="chat",
        slack=SIGNING_SECRET,
        directory=Directory({"alice": Person(slack_user="U0ALICE")}),
    )
    await world.room("room", "alice")
    pending_id = await world.ask()
    header, start = FRAMINGS[framing]
    paths = {
        f"/api/requests/{pending_id}/answer": "application/json",
        f"/api/requests/{pending_id}/reject": "application/json",
        "/api/sign-in": "application/json",
        "/api/rooms/room/messages": "application/json",
        "/api/slack/interactions": "application/x-www-form-urlencoded",
    }
    async with serve(world.app) as base:
        for path, content_type in paths.items():
            sent = head(path, framing=header, content_type=content_type) + start
            reply = (await exchange(base, sent)).decode()
            assert reply.startswith("HTTP/1.1 408 "), (path, reply)
            assert "did not arrive whole within 0.2 seconds" in reply, (path, reply)
            assert "send it again, all of it at once" in reply
            assert "connection: close" in reply.lower()
    request = await world.handler.get_request(pending_id)
    assert request is not None
    assert request.status == "pending"


def test_a_body_timeout_must_be_a_positive_number() -> None:
    for wrong in (0, -1.0, float("inf"), float("nan"), True, "30"):
        with pytest.raises(ValueError, match="read_timeout must be a positive number"):
            BodyLimits(read_timeout=wrong)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="body_timeout must be a positive number"):
            DeskLimits(body_timeout=wrong)  # type: ignore[arg-type]


def test_bodies_have_thirty_seconds_by_default() -> None:
    assert BodyLimits().read_timeout == DeskLimits().body_timeout == 30.0
    assert DeskLimits(body_timeout=5).bodies.read_timeout == 5

"""The desk's WebSocket caps on a real uvicorn: so many sockets per person, so many in all."""

from __future__ import annotations

import contextlib
import json
import logging

import pytest
import websockets
from desk_harness import World, next_frame, serve, socket_for, token, ws_url
from websockets.asyncio.client import connect

from roomkit.desk import DeskLimits

ROOMY = {"rate": 1_000_000.0, "burst": 1_000_000}


async def refused(base: str, actor: str) -> tuple[int | None, str | None]:
    """Open a socket as ``actor`` past a cap: the code and reason it is closed with."""
    async with connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": token(actor)}))
        with pytest.raises(websockets.ConnectionClosed):
            await ws.recv()
        return ws.close_code, ws.close_reason


async def ended_by_the_desk(ws: websockets.asyncio.client.ClientConnection) -> None:
    """End a socket from the desk's side (a frame over its cap: 1009), so that its place is
    free by the time the close arrives, which a close from the client does not promise."""
    await ws.send("x" * (64 * 1024 + 1))
    with contextlib.suppress(websockets.ConnectionClosed):
        while True:
            await ws.recv()
    assert ws.close_code == 1009


def refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == "websocket_refused"]


async def test_a_person_past_their_cap_is_refused_and_their_sockets_stay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World(limits=DeskLimits(**ROOMY, sockets_per_person=2))
    await world.room("room", "alice", "bob")
    caplog.set_level(logging.WARNING, logger="roomkit.desk")
    async with (
        serve(world.app) as base,
        socket_for(base, "alice") as (first, _),
        socket_for(base, "alice") as (second, _),
    ):
        code, reason = await refused(base, "alice")
        async with socket_for(base, "bob") as (bob, _):
            pending_id = await world.ask(actor_id=None)
            for ws in (first, second, bob):
                assert (await next_frame(ws, "question_pending"))["request"]["id"] == pending_id
        assert [r.getMessage() for r in refusals(caplog)] == [
            "The desk refused a WebSocket of alice: "
            "Too many open sockets for one person (2): close one"
        ]
        await ended_by_the_desk(first)
        async with socket_for(base, "alice") as (_, snapshot):
            assert [view["id"] for view in snapshot] == [pending_id]
    assert (code, reason) == (1008, "Too many open sockets for one person (2): close one")


async def test_the_desk_past_its_cap_refuses_one_more_until_a_place_frees() -> None:
    world = World(limits=DeskLimits(**ROOMY, sockets=2))
    await world.room("room", "alice", "bob", "carol")
    async with serve(world.app) as base, socket_for(base, "alice") as (alice, _):
        async with socket_for(base, "bob") as (bob, _):
            code, reason = await refused(base, "carol")
            await ended_by_the_desk(bob)
        async with socket_for(base, "carol") as (carol, _):
            pending_id = await world.ask(actor_id=None)
            for ws in (alice, carol):
                assert (await next_frame(ws, "question_pending"))["request"]["id"] == pending_id
    assert (code, reason) == (1013, "The desk holds its most open sockets (2): try again later")


@pytest.mark.parametrize("name", ["sockets_per_person", "sockets"])
def test_a_socket_cap_must_be_a_positive_int(name: str) -> None:
    with pytest.raises(ValueError, match=f"DeskLimits.{name} must be a positive int, got 0"):
        DeskLimits(**{name: 0})  # type: ignore[arg-type]


def test_the_socket_caps_default_to_16_per_person_and_4096_in_all() -> None:
    assert (DeskLimits().sockets_per_person, DeskLimits().sockets) == (16, 4096)

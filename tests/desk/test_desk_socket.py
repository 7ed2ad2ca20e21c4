"""The desk's WebSocket on a real uvicorn: snapshot, pushes to the people concerned, limits."""

from __future__ import annotations

import json
import logging
import math
import time
from types import SimpleNamespace

import pytest
import websockets
from desk_harness import SECRET, World, bearer, next_frame, serve, socket_for, ws_url
from websockets.asyncio.client import connect

import roomkit.desk.ws
from roomkit.desk import DeskLimits, issue_token
from roomkit.desk.ws import FLOODED, TOKEN_IN_URL


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice", "bob")
    await world.room("other", "carol")
    return world


async def closed_with(ws: websockets.asyncio.client.ClientConnection) -> int | None:
    """Read until the server closes; the close code."""
    try:
        while True:
            await ws.recv()
    except websockets.ConnectionClosed:
        return ws.close_code


async def test_the_snapshot_holds_the_callers_open_questions(world: World) -> None:
    mine = await world.ask(actor_id="alice")
    room_wide = await world.ask(actor_id=None)
    await world.ask(actor_id="bob")
    async with serve(world.app) as base, socket_for(base, "alice") as (_, snapshot):
        assert [view["id"] for view in snapshot] == [mine, room_wide]


async def test_a_new_question_and_its_outcome_are_pushed_to_its_actor(world: World) -> None:
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, _):
        pending_id = await world.ask(actor_id="alice")
        pushed = await next_frame(ws)
        async with world.client() as client:
            await client.post(
                f"/api/requests/{pending_id}/answer",
                json={"answer": "red"},
                headers=bearer("alice"),
            )
        settled = await next_frame(ws)
    assert (pushed["type"], pushed["request"]["id"]) == ("question_pending", pending_id)
    assert settled["type"] == "question_settled"
    assert (settled["request"]["status"], settled["request"]["settled_by"]) == ("resolved", "alice")


async def test_pushes_reach_only_the_people_concerned(world: World) -> None:
    async with (
        serve(world.app) as base,
        socket_for(base, "alice") as (alice, _),
        socket_for(base, "carol") as (carol, _),
        socket_for(base, "root", admin=True) as (root, _),
    ):
        for_bob = await world.ask(actor_id="bob")
        room_wide = await world.ask(actor_id=None)
        for_carol = await world.ask(room_id="other", actor_id=None)
        alice_sees = (await next_frame(alice))["request"]["id"]
        carol_sees = (await next_frame(carol))["request"]["id"]
        root_sees = [(await next_frame(root))["request"]["id"] for _ in range(3)]
    assert alice_sees == room_wide, "not bob's question; the room's one"
    assert carol_sees == for_carol
    assert root_sees == [for_bob, room_wide, for_carol]


async def test_a_reconnecting_client_gets_the_current_state_first(world: World) -> None:
    first = await world.ask(actor_id="alice")
    async with serve(world.app) as base:
        async with socket_for(base, "alice") as (_, snapshot):
            assert [view["id"] for view in snapshot] == [first]
        await world.handler.areject(first, "gone")
        second = await world.ask(actor_id="alice")
        async with socket_for(base, "alice") as (ws, snapshot):
            assert [view["id"] for view in snapshot] == [second]
            third = await world.ask(actor_id="alice")
            assert (await next_frame(ws))["request"]["id"] == third


async def test_a_withdrawal_is_pushed_with_its_reason(world: World) -> None:
    pending_id = await world.ask(actor_id="alice")
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, _):
        world.handler.release(pending_id)
        settled = (await next_frame(ws, "question_settled"))["request"]
    assert (settled["status"], settled["withdrawn"]) == ("rejected", True)
    assert settled["reason"]


async def test_room_messages_reach_participants_and_admins(world: World) -> None:
    hub = world.app.state.desk_hub
    message = {"id": "m1", "sender_id": "bob", "channel_id": "web", "body": "hi", "created_at": "x"}
    async with (
        serve(world.app) as base,
        socket_for(base, "alice") as (alice, _),
        socket_for(base, "carol") as (carol, _),
        socket_for(base, "root", admin=True) as (root, _),
    ):
        await hub.publish_room_message("room", message)
        await hub.publish_room_message("other", dict(message, id="m2"))
        assert (await next_frame(alice))["message"]["id"] == "m1"
        assert (await next_frame(carol))["message"]["id"] == "m2"
        frames = [await next_frame(root) for _ in range(2)]
    assert [frame["room_id"] for frame in frames] == ["room", "other"]
    assert frames[0]["type"] == "room_message"


async def test_unknown_frames_are_ignored(world: World) -> None:
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, _):
        await ws.send("not json")
        await ws.send(json.dumps({"type": "subscribe", "room": "x"}))
        pending_id = await world.ask(actor_id="alice")
        assert (await next_frame(ws))["request"]["id"] == pending_id


async def test_a_flood_of_frames_closes_the_socket_saying_why() -> None:
    world = World(limits=DeskLimits(rate=1.0, burst=10))
    await world.room("room", "alice")
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, _):
        for _ in range(50):
            await ws.send("{}")
        assert await closed_with(ws) == 1008
        assert ws.close_reason == FLOODED


@pytest.mark.parametrize("name", ["token", "access_token"])
async def test_a_token_in_the_url_closes_at_once_saying_where_it_goes(
    world: World, name: str
) -> None:
    async with serve(world.app) as served:
        address = f"{ws_url(served)}?{name}={issue_token(SECRET, 'alice')}"
        async with connect(address) as ws:
            assert await closed_with(ws) == 1008
            assert ws.close_reason == TOKEN_IN_URL


async def test_a_frame_over_the_cap_closes_with_1009(world: World) -> None:
    async with serve(world.app) as base, socket_for(base, "alice") as (ws, _):
        await ws.send("x" * (64 * 1024 + 1))
        assert await closed_with(ws) == 1009


async def test_an_oversized_auth_frame_closes_with_1009(world: World) -> None:
    async with serve(world.app, ws_max_size=1024 * 1024) as base, connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": "x" * (64 * 1024)}))
        assert await closed_with(ws) == 1009


@pytest.mark.parametrize(
    "first",
    ['{"type": "auth", "token": "forged.token"}', '{"type": "hello"}', "[]"],
    ids=["bad-token", "not-auth", "not-object"],
)
async def test_a_client_that_does_not_authenticate_is_closed(world: World, first: str) -> None:
    async with serve(world.app) as base, connect(ws_url(base)) as ws:
        await ws.send(first)
        assert await closed_with(ws) == 1008


async def test_a_refusal_too_long_for_a_close_frame_closes_with_its_head(world: World) -> None:
    """A close frame holds 123 bytes of reason: a longer refusal (a token of another desk's
    key, whose message says where a good one comes from) closes with what happened."""
    foreign = issue_token("another-desks-secret-0123456789abcdef", "alice")
    async with serve(world.app) as base, connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "auth", "token": foreign}))
        assert await closed_with(ws) == 1008
        assert ws.close_reason == "Invalid or expired token"


async def test_a_client_silent_past_the_auth_timeout_is_closed() -> None:
    world = World(limits=DeskLimits(auth_timeout=0.05))
    async with serve(world.app) as base, connect(ws_url(base)) as ws:
        assert await closed_with(ws) == 1008


async def test_a_cross_origin_upgrade_is_refused(world: World) -> None:
    async with serve(world.app) as base:
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(ws_url(base), origin="http://evil.example"):  # type: ignore[arg-type]
                pass
        async with socket_for(base, "alice", origin=base) as (_, snapshot):
            assert snapshot == []
    assert refused.value.response.status_code == 403


async def test_configured_origins_replace_the_same_host_rule() -> None:
    world = World(allowed_origins=["https://desk.example.com/"])
    async with serve(world.app) as base:
        async with socket_for(base, "alice", origin="https://desk.example.com") as (_, snap):
            assert snap == []
        with pytest.raises(websockets.InvalidStatus):
            async with connect(ws_url(base), origin=base):  # type: ignore[arg-type]
                pass


async def test_an_expiring_token_closes_its_socket_at_expiry(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token is valid as the socket opens; the socket's clock then reads a moment before
    its expiry, so the socket closes at once, however long the machine took to connect."""
    issued = float(math.floor(time.time()))
    expiring = issue_token(SECRET, "alice", ttl=3600, now=issued)
    monkeypatch.setattr(roomkit.desk.ws, "time", SimpleNamespace(time=lambda: issued + 3599.99))
    async with serve(world.app) as base, socket_for(base, expiring) as (ws, _):
        assert await closed_with(ws) == 1008


async def test_a_spent_answer_link_cannot_open_a_socket(world: World) -> None:
    from roomkit.desk import issue_answer_link

    pending_id = await world.ask(actor_id="bob")
    link = issue_answer_link(SECRET, pending_id, "bob", 60)
    async with serve(world.app) as base:
        async with socket_for(base, link) as (_, snapshot):
            assert [view["id"] for view in snapshot] == [pending_id]
        async with world.client() as client:
            await client.post(
                f"/api/requests/{pending_id}/reject", json={"reason": "no"}, headers=bearer(link)
            )
        async with connect(ws_url(base)) as ws:
            await ws.send(json.dumps({"type": "auth", "token": link}))
            assert await closed_with(ws) == 1008


async def test_the_hub_follows_the_handler_only_while_clients_are_connected(
    world: World,
) -> None:
    from roomkit.desk import Principal

    hub = world.app.state.desk_hub
    first = await hub.join(Principal("alice"))
    second = await hub.join(Principal("root", admin=True))
    following = hub.clients == 2 and hub._worker is not None
    hub.leave(first)
    still = hub._worker is not None
    hub.leave(second)
    assert following
    assert still
    assert (hub.clients, hub._worker) == (0, None)


ALICE = issue_token(SECRET, "alice")


@pytest.mark.parametrize(
    "first",
    [
        f'{{"type": "auth", "token": "{ALICE}", "token": "{ALICE}"}}',
        f'{{"type": "auth", "token": "{ALICE}", "n": {"9" * 5000}}}',
        f'{{"type": "auth", "token": "{ALICE}", "n": {"[" * 33 + "]" * 33}}}',
    ],
    ids=["duplicate-key", "huge-number", "33-deep"],
)
async def test_an_auth_frame_json_does_not_take_closes_though_its_token_is_good(
    world: World, first: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The first frame is read as every body is: a key given twice is refused, not guessed."""
    async with serve(world.app) as base:
        async with connect(ws_url(base)) as ws:
            await ws.send(first)
            assert await closed_with(ws) == 1008
            assert "The first frame must be" in (ws.close_reason or "")
        async with socket_for(base, ALICE) as (_, snapshot):
            assert snapshot == []
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []


@pytest.mark.parametrize(
    "first",
    ["[" * 30_000, '{"a":' * 12_000, '{"type": "auth", "token": ' + "[" * 30_000],
    ids=["arrays", "objects", "in-the-auth-frame"],
)
async def test_a_deeply_nested_first_frame_closes_cleanly(
    world: World, first: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Nesting deep enough to exhaust the parser's recursion closes with 1008, logging no error."""
    async with serve(world.app) as base, connect(ws_url(base)) as ws:
        await ws.send(first)
        assert await closed_with(ws) == 1008
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []

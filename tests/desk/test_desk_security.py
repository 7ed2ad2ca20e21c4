"""Attacks on the desk: other people's questions, forged links, malformed bodies, origins, logs."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator

import httpx
import pytest
import websockets
from desk_harness import SECRET, World, bearer, next_frame, serve, socket_for, token, ws_url
from websockets.asyncio.client import connect

from roomkit.desk import DeskLimits, TokenAuthenticator, issue_answer_link

ACTORS = [f"actor{index}" for index in range(10)]
ROOMS = [f"room{index}" for index in range(10)]
VALID = {"answer": "yes"}


async def crowded_world() -> tuple[World, dict[str, list[str]]]:
    """10 actors in 10 rooms (actor i in room i), each room with a personal and a room-wide ask."""
    world = World()
    owned: dict[str, list[str]] = {}
    for actor, room in zip(ACTORS, ROOMS, strict=True):
        await world.room(room, actor)
        owned[actor] = [
            await world.ask({"question": "Go?"}, room_id=room, actor_id=actor),
            await world.ask({"question": "Go?"}, room_id=room, actor_id=None),
        ]
    return world, owned


async def test_nobody_reads_answers_or_rejects_anyone_elses_question() -> None:
    world, owned = await crowded_world()
    successes, attempts = 0, 0
    async with world.client() as client:
        for actor in ACTORS:
            headers = bearer(actor)
            listed = (await client.get("/api/requests", headers=headers)).json()["requests"]
            assert sorted(view["id"] for view in listed) == sorted(owned[actor])
            for other, ids in owned.items():
                if other == actor:
                    continue
                for pending_id in ids:
                    replies = [
                        await client.get(f"/api/requests/{pending_id}", headers=headers),
                        await client.post(
                            f"/api/requests/{pending_id}/answer", json=VALID, headers=headers
                        ),
                        await client.post(
                            f"/api/requests/{pending_id}/reject", json={}, headers=headers
                        ),
                    ]
                    attempts += len(replies)
                    successes += sum(reply.status_code < 400 for reply in replies)
                    assert {reply.status_code for reply in replies} == {404}
        # The owners still can: the refusals above were about who asked, not a broken desk.
        for actor in ACTORS:
            for pending_id in owned[actor]:
                reply = await client.post(
                    f"/api/requests/{pending_id}/answer", json=VALID, headers=bearer(actor)
                )
                assert reply.status_code == 200
    assert attempts == 10 * 18 * 3
    assert successes == 0


async def test_nobody_is_pushed_anyone_elses_question() -> None:
    world, owned = await crowded_world()
    async with serve(world.app) as base:
        for actor in ACTORS:
            async with socket_for(base, actor) as (_, snapshot):
                assert sorted(view["id"] for view in snapshot) == sorted(owned[actor])


def flipped(token: str, *, printable: bool) -> Iterator[str]:
    """Every token one bit away from ``token`` (printable ASCII only, when asked)."""
    for index, char in enumerate(token):
        for bit in range(8 if not printable else 7):
            changed = chr(ord(char) ^ (1 << bit))
            if printable and not (changed.isascii() and changed.isprintable() and changed != " "):
                continue
            yield token[:index] + changed + token[index + 1 :]


async def test_no_bit_flipped_token_is_accepted() -> None:
    link = issue_answer_link(SECRET, "req", "bob", 600)
    actor = token("root", admin=True)
    authenticator = TokenAuthenticator(SECRET)
    accepted = 0
    for original in (link, actor):
        for forged in flipped(original, printable=False):
            try:
                await authenticator.authenticate(forged)
            except PermissionError:
                continue
            accepted += 1
    assert accepted == 0


async def test_replayed_expired_foreign_and_flipped_links_are_refused_over_http() -> None:
    world = World()
    await world.room("room", "bob")
    pending_id = await world.ask(actor_id="bob")
    used = issue_answer_link(SECRET, pending_id, "bob", 600)
    expired = issue_answer_link(SECRET, pending_id, "bob", 1, now=1_000_000.0)
    foreign = issue_answer_link("some-other-desk-secret-0123456789", pending_id, "bob", 600)
    fresh = issue_answer_link(SECRET, pending_id, "bob", 600)
    accepted = 0
    async with world.client() as client:
        url = f"/api/requests/{pending_id}"
        assert (await client.get(url, headers=bearer(used))).status_code == 200
        reject = await client.post(f"{url}/reject", json={}, headers=bearer(used))
        assert reject.status_code == 200
        forged = [used, expired, foreign, *flipped(fresh, printable=True)]
        for candidate in forged:
            for method, path, body in (("GET", url, None), ("POST", f"{url}/answer", VALID)):
                headers = {"Authorization": f"Bearer {candidate}"}
                reply = await client.request(method, path, json=body, headers=headers)
                accepted += reply.status_code < 400
                assert reply.status_code in (401, 409), reply.text
    assert len(forged) > 500
    assert accepted == 0


def malformed_bodies(rng: random.Random) -> Iterator[tuple[bytes, str]]:
    """1,000 bad bodies (and a content type): broken JSON, deep, huge, mistyped, oversized."""
    valid = [b'{"answer": "yes"}', b'{"answers": [{"question": "Q", "answer": "a"}]}']
    breakers = [
        lambda: rng.choice(valid)[: rng.randrange(1, 15)],
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),
        lambda: b"[" * rng.randrange(33, 20_000),
        lambda: (b'{"answer":' * rng.randrange(33, 3000)) + b"1",
        lambda: b'{"answer": ' + rng.choice([b"1e999", b"-1e999", b"NaN", b"Infinity"]) + b"}",
        lambda: b'{"answer": ' + b"9" * rng.randrange(4301, 20_000) + b"}",
        lambda: (
            b'{"answer": ' + json.dumps(rng.choice([1, 2.5, None, True, {}, [1]])).encode() + b"}"
        ),
        lambda: b'{"answers": ' + json.dumps(rng.choice(["x", 1, [1], [{}]])).encode() + b"}",
        lambda: b'{"confirmed": ' + json.dumps(rng.choice(["true", 1, None, []])).encode() + b"}",
        lambda: b'{"answer": "yes", "' + rng.randbytes(4).hex().encode() + b'": 1}',
        lambda: b'{"reason": ' + json.dumps(rng.choice([5, [], "x" * 1001])).encode() + b"}",
        lambda: b'{"answer": "' + b"y" * rng.randrange(64 * 1024, 200 * 1024) + b'"}',
        lambda: b'"\xff\xfe\xfd"',
    ]
    for _ in range(1000):
        content_type = rng.choice(["application/json"] * 4 + ["text/plain", ""])
        yield rng.choice(breakers)(), content_type


async def test_a_thousand_malformed_bodies_all_get_4xx_and_leave_the_questions_open() -> None:
    world = World()
    await world.room("room", "alice")
    targets = [
        await world.ask({"question": "Go?", "options": ["yes", "no"]}),
        await world.ask({"questions": [{"question": "Q", "options": ["a"], "multiSelect": False}]}),
        await world.ask({"action": "Deploy"}, tool_name="ConfirmAction"),
        await world.ask({"x": 1}, tool_name="Form", answer_schema={"const": "never sent"}),
    ]
    rng = random.Random(20_240_601)
    statuses: list[int] = []
    async with world.client() as client:
        for body, content_type in malformed_bodies(rng):
            pending_id = rng.choice(targets)
            action = rng.choice(["answer", "reject"])
            headers = {**bearer("alice"), "content-type": content_type}
            reply = await client.post(
                f"/api/requests/{pending_id}/{action}", content=body, headers=headers
            )
            statuses.append(reply.status_code)
            assert isinstance(reply.json().get("detail"), str), (body[:80], reply.text[:200])
    assert len(statuses) == 1000
    assert all(400 <= status < 500 for status in statuses), sorted(set(statuses))
    for pending_id in targets:
        assert (await world.handler.get_request(pending_id)).status == "pending"


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "null", "http://127.0.0.1.evil.example", "https://127.0.0.1:1"],
)
async def test_a_cross_origin_websocket_upgrade_is_refused(origin: str) -> None:
    world = World()
    async with serve(world.app) as base:
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(ws_url(base), origin=origin):  # type: ignore[arg-type]
                pass
    assert refused.value.response.status_code == 403


SERVER_LOGGERS = ("roomkit", "uvicorn", "fastapi", "starlette")


async def test_tokens_never_reach_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    world = World(limits=DeskLimits(rate=1000.0, burst=2))
    await world.room("room", "alice")
    pending_id = await world.ask(actor_id="alice")
    alice = token("alice")
    link = issue_answer_link(SECRET, pending_id, "alice", 600)
    forged = alice[:-4] + "AAAA"
    caplog.set_level(logging.DEBUG)
    async with serve(world.app, log_level="trace", access_log=True) as base:
        async with httpx.AsyncClient(base_url=base) as client:
            for value in (alice, forged, link):
                await client.get("/api/requests", headers=bearer(value))
                await client.get(f"/api/requests/{pending_id}", headers=bearer(value))
            for _ in range(3):  # past the burst: 429s are logged too
                await client.get("/api/me", headers=bearer(alice))
            await client.post(f"/api/requests/{pending_id}/answer", json={}, headers=bearer(link))
        async with socket_for(base, alice) as (ws, _):
            second = await world.ask(actor_id="alice")
            assert (await next_frame(ws))["request"]["id"] == second
        async with connect(ws_url(base)) as ws:
            await ws.send(json.dumps({"type": "auth", "token": forged}))
            with pytest.raises(websockets.ConnectionClosed):
                await ws.recv()
    server_lines = [
        record.getMessage()
        for record in caplog.records
        if record.name.split(".")[0] in SERVER_LOGGERS
    ]
    assert any("GET /api/requests" in line for line in server_lines), "the access log ran"
    text = "\n".join(server_lines)
    for secret_text in (alice, forged, link, alice.split(".")[1], link.split(".")[1]):
        assert secret_text not in text

"""Every route of the desk that takes a body reads it under limits before anything parses it.

The routes are read from the app (the desk with its chat and Slack's clicks): a route added
with a body and without a row here fails the test, so that no body reaches a parser unchecked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlencode

import pytest
from desk_harness import SECRET, World, bearer
from fastapi import FastAPI
from tests.notify.slack_api import SIGNING_SECRET
from tests.servers.slack_clicks import signed
from tests.streamed_body import StreamedBody

from roomkit.bodies import BODY_METHODS
from roomkit.desk import DeskLimits, issue_sign_in_link
from roomkit.notify import Directory, Person

DIRECTORY = Directory({"alice": Person(slack_user="U0ALICE")})

ATTACKS = {
    "50000-deep": (b"[" * 50_000, "nests arrays and objects 50000 levels deep"),
    "65-deep": (b'{"answer": ' + b"[" * 64 + b"]" * 64 + b"}", "65 levels deep; at most"),
    "duplicate-key": (b'{"answer": "yes", "answer": "no"}', "names the key 'answer' twice"),
    "huge-number": (b'{"answer": ' + b"9" * 5000 + b"}", "5000 characters long"),
    "out-of-range": (b'{"answer": 1e999}', "beyond a float's range"),
    "nan": (b'{"answer": NaN}', "NaN, which is not a JSON number"),
    "not-utf-8": (b'{"answer": "\xff"}', "not UTF-8 text"),
}

Sender = Callable[[bytes], tuple[str, bytes, dict[str, str]]]


def as_alice(path: str) -> Sender:
    return lambda body: (path, body, {**bearer("alice"), "content-type": "application/json"})


def with_sign_in_link(path: str) -> Sender:
    """The route is gated for a sign-in link: only its holder's body is read."""
    link = {"authorization": f"Bearer {issue_sign_in_link(SECRET, 'alice')}"}
    return lambda body: (path, body, {**link, "content-type": "application/json"})


def as_slack(body: bytes) -> tuple[str, bytes, dict[str, str]]:
    form = urlencode({"payload": body}).encode()
    return "/api/slack/interactions", form, signed(form)


async def desk_with_every_surface() -> tuple[World, str]:
    world = World(chat_channel_id="chat", slack=SIGNING_SECRET, directory=DIRECTORY)
    await world.room("room", "alice")
    return world, await world.ask()


def senders(pending_id: str) -> dict[tuple[str, str], Sender]:
    """How each route that takes a body is sent one, by (method, path) as the app names it."""
    return {
        ("POST", "/api/sign-in"): with_sign_in_link("/api/sign-in"),
        ("POST", "/api/requests/{request_id}/answer"): as_alice(
            f"/api/requests/{pending_id}/answer"
        ),
        ("POST", "/api/requests/{request_id}/reject"): as_alice(
            f"/api/requests/{pending_id}/reject"
        ),
        ("POST", "/api/rooms/{room_id}/messages"): as_alice("/api/rooms/room/messages"),
        ("POST", "/api/slack/interactions"): as_slack,
        ("POST", "/api/grants/{grant_id}/revoke"): as_alice("/api/grants/g-none/revoke"),
        ("POST", "/api/push/subscriptions"): as_alice("/api/push/subscriptions"),
        ("DELETE", "/api/push/subscriptions"): as_alice("/api/push/subscriptions"),
    }


def routes_of(app: FastAPI) -> Iterable[Any]:
    """Every route of ``app``, those of included routers too, with their full paths."""
    try:
        from fastapi.routing import iter_route_contexts  # FastAPI's lazy includes (0.160+)
    except ImportError:
        return list(app.routes)
    return list(iter_route_contexts(app.routes))


async def test_every_route_that_takes_a_body_has_a_row() -> None:
    world, pending_id = await desk_with_every_surface()
    taking = {
        (method, route.path)
        for route in routes_of(world.app)
        for method in (getattr(route, "methods", None) or set()) & BODY_METHODS
    }
    assert taking == set(senders(pending_id))


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_every_body_json_does_not_take_is_a_400_and_the_desk_serves_on(
    attack: str,
) -> None:
    world, pending_id = await desk_with_every_surface()
    body, words = ATTACKS[attack]
    async with world.client() as client:
        for (method, route), send in senders(pending_id).items():
            if route == "/api/slack/interactions" and attack == "not-utf-8":
                continue  # a form field's bytes are read with the form's: U+FFFD for "\xff"
            path, content, headers = send(body)
            reply = await client.request(method, path, content=content, headers=headers)
            assert reply.status_code == 400, (path, reply.text)
            assert words in reply.json()["detail"], (path, reply.text)
        me = await client.get("/api/me", headers=bearer("alice"))
        answered = await client.post(
            f"/api/requests/{pending_id}/answer", json={"answer": "blue"}, headers=bearer("alice")
        )
    assert me.json()["actor_id"] == "alice"
    assert answered.status_code == 200
    assert json.loads(answered.text)["result"] == "blue"


async def test_a_body_over_the_cap_is_a_413_on_every_route() -> None:
    world, pending_id = await desk_with_every_surface()
    async with world.client() as client:
        for (method, _), send in senders(pending_id).items():
            # Past every cap: the answer route's (room for an edit of every argument) too.
            path, content, headers = send(b'"' + b"x" * (1024 * 1024) + b'"')
            reply = await client.request(method, path, content=content, headers=headers)
            assert reply.status_code == 413, (path, reply.text)
            assert "-byte limit" in reply.json()["detail"]


def gated(pending_id: str) -> dict[tuple[str, str], str]:
    """The path of each route that takes a body behind a token (Slack's clicks are signed)."""
    return {
        route: send(b"")[0]
        for route, send in senders(pending_id).items()
        if route[1] != "/api/slack/interactions"
    }


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token", f"Bearer {'x' * 40}.y"])
async def test_a_caller_without_a_valid_token_is_refused_before_the_body_is_parsed(
    authorization: str | None,
) -> None:
    """Not JSON at all, yet the answer is the token's 401, not a 400 about the body."""
    world, pending_id = await desk_with_every_surface()
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    async with world.client() as client:
        for (method, _), path in gated(pending_id).items():
            reply = await client.request(method, path, content=b"{not json", headers=headers)
            assert reply.status_code == 401, (path, reply.text)
            assert "body" not in reply.json()["detail"].lower(), (path, reply.text)
            assert reply.headers["www-authenticate"] == "Bearer"


async def test_a_caller_without_a_valid_token_is_refused_without_the_body_being_read() -> None:
    """A body far over every cap, streamed: not one chunk of it is taken before the 401."""
    world, pending_id = await desk_with_every_surface()
    body = StreamedBody()

    headers = {"content-type": "application/json", "authorization": "Bearer not-a-token"}
    async with world.client() as client:
        for (method, _), path in gated(pending_id).items():
            reply = await client.request(method, path, content=body.chunks(), headers=headers)
            assert reply.status_code == 401, (path, reply.text)
            assert body.taken == [], path
        # With a valid token the same body is read, up to the cap, and refused for its size.
        headers["authorization"] = bearer("alice")["Authorization"]
        path = f"/api/requests/{pending_id}/reject"
        reply = await client.post(path, content=body.chunks(), headers=headers)
    assert reply.status_code == 413
    assert body.taken


async def test_a_caller_past_the_rate_limit_is_refused_before_the_body_is_parsed() -> None:
    """The bucket is spent once per request, and an empty one answers 429 before the body."""
    world = World(limits=DeskLimits(rate=0.001, burst=1))
    await world.room("room", "alice")
    pending_id = await world.ask()
    headers = {**bearer("alice"), "content-type": "application/json"}
    path = f"/api/requests/{pending_id}/reject"
    async with world.client() as client:
        first = await client.post(path, content=b"{not json", headers=headers)
        second = await client.post(path, content=b"{not json", headers=headers)
    assert first.status_code == 400
    assert second.status_code == 429
    assert "Retry-After" in second.headers


async def test_a_method_a_route_does_not_take_is_a_405_without_the_body_being_read() -> None:
    """``POST /api/me`` (and every such pair) is refused for its method, its body unread."""
    world, _ = await desk_with_every_surface()
    body = StreamedBody()

    routes = [route for route in routes_of(world.app) if getattr(route, "methods", None)]
    taking: dict[str, set[str]] = {}
    for route in routes:
        taking.setdefault(route.path, set()).update(route.methods)
    headers = {"content-type": "application/json", "authorization": "Bearer not-a-token"}
    tried = 0
    async with world.client() as client:
        for path, methods in taking.items():
            if not path.startswith("/api/"):
                continue
            for method in sorted(BODY_METHODS - methods):
                sent = path.replace("{", "").replace("}", "")
                reply = await client.request(method, sent, content=body.chunks(), headers=headers)
                assert reply.status_code == 405, (method, path, reply.text)
                assert reply.headers["cache-control"] == "no-store", (method, path)
                assert body.taken == [], (method, path)
                tried += 1
    assert tried > 20

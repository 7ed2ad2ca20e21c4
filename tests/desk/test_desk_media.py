"""A body not sent as JSON gets 415 naming the header to send; a method a route of the API
does not take gets 405 with the route's ``Allow``, not the page's 404."""

from __future__ import annotations

import pytest
from desk_harness import World, bearer
from fastapi import FastAPI
from test_desk_bodies import desk_with_every_surface, routes_of

from roomkit.desk import mount_desk
from roomkit.desk.media import takes_json

HEADER = "with the header Content-Type: application/json"


async def test_every_route_that_reads_json_refuses_a_body_sent_as_something_else() -> None:
    world, pending_id = await desk_with_every_surface()
    reading = {
        (method, route.path)
        for route in routes_of(world.app)
        if takes_json(route)
        for method in route.methods
    }
    assert reading == {
        ("POST", "/api/requests/{request_id}/answer"),
        ("POST", "/api/requests/{request_id}/reject"),
        ("POST", "/api/rooms/{room_id}/messages"),
        ("POST", "/api/push/subscriptions"),
        ("DELETE", "/api/push/subscriptions"),
    }
    paths = {"{request_id}": pending_id, "{room_id}": "room"}
    async with world.client() as client:
        for method, route in sorted(reading):
            path = route
            for name, value in paths.items():
                path = path.replace(name, value)
            for sent, came in [
                ({}, "(it came with no Content-Type)"),
                ({"content-type": "text/plain"}, "(it came as 'text/plain')"),
                ({"content-type": "application/x-www-form-urlencoded"}, "as 'application/x-www"),
            ]:
                reply = await client.request(
                    method, path, content=b'{"answer": "blue"}', headers={**bearer("alice"), **sent}
                )
                assert reply.status_code == 415, (method, path, reply.text)
                assert HEADER in reply.json()["detail"]
                assert came in reply.json()["detail"]
        # Nothing was answered, and the same body as JSON goes through.
        answered = await client.post(
            f"/api/requests/{pending_id}/answer",
            content=b'{"answer": "blue"}',
            headers={**bearer("alice"), "content-type": "application/json; charset=utf-8"},
        )
    assert answered.status_code == 200, answered.text
    assert answered.json()["result"] == "blue"


async def test_a_body_not_sent_as_json_still_needs_a_token() -> None:
    world = World()
    await world.room("room", "alice")
    pending_id = await world.ask()
    async with world.client() as client:
        reply = await client.post(
            f"/api/requests/{pending_id}/answer", content=b'{"answer": "blue"}'
        )
    assert reply.status_code == 401


@pytest.mark.parametrize("action", ["answer", "reject"])
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_a_method_an_api_route_does_not_take_is_a_405(method: str, action: str) -> None:
    world = World()
    await world.room("room", "alice")
    pending_id = await world.ask()
    async with world.client() as client:
        reply = await client.request(
            method, f"/api/requests/{pending_id}/{action}", headers=bearer("alice")
        )
        unknown = await client.get("/api/nothing-here", headers=bearer("alice"))
        page = await client.get("/")
    assert (reply.status_code, reply.headers["allow"]) == (405, "POST")
    assert reply.json() == {"detail": "Method Not Allowed"}
    assert reply.headers["cache-control"] == "no-store"
    assert (unknown.status_code, unknown.json()) == (404, {"detail": "Not Found"})
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]


async def test_a_mounted_desk_answers_a_wrong_method_with_405() -> None:
    app = FastAPI()
    world = World()
    mount_desk(app, world.kit, handler=world.handler, secret="m" * 32)
    world.app = app
    async with world.client() as client:
        reply = await client.get("/desk/api/requests/q1/answer")
        page = await client.get("/desk/")
    assert (reply.status_code, reply.headers["allow"]) == (405, "POST")
    assert page.status_code == 200


async def test_an_empty_json_body_is_named_as_missing() -> None:
    """A JSON body left out (``Content-Type`` said JSON, nothing followed) is named as such,
    not as a ``Field required`` with no field."""
    world, pending_id = await desk_with_every_surface()
    async with world.client() as client:
        reply = await client.post(
            f"/api/requests/{pending_id}/answer",
            content=b"",
            headers={**bearer("alice"), "content-type": "application/json"},
        )
    assert reply.status_code == 422
    assert reply.json()["detail"] == (
        "The request has no body: send a JSON object, with Content-Type: application/json"
    )

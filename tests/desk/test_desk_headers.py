"""The desk's headers: on every response it sends, errors included, and on its routes only."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from desk_harness import SECRET, World, bearer
from fastapi import FastAPI
from starlette.responses import PlainTextResponse

from roomkit import RoomKit
from roomkit.desk import DeskLimits, desk_router
from roomkit.desk.app import CONTENT_SECURITY_POLICY
from roomkit.tools.human_input import HumanInputHandler

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
SECURITY = {"content-security-policy": CSP, "x-content-type-options": "nosniff"}
API = {**SECURITY, "cache-control": "no-store"}


def carries(response: httpx.Response, expected: dict[str, str]) -> bool:
    return all(response.headers.get(name) == value for name, value in expected.items())


def boom() -> None:
    raise RuntimeError("a bug in a route")


def test_the_policy_lets_scripts_connect_only_to_the_desk_itself() -> None:
    assert CONTENT_SECURITY_POLICY == CSP
    connect_src = next(d for d in CSP.split("; ") if d.startswith("connect-src"))
    assert connect_src.split()[1:] == ["'self'"]


async def test_every_response_of_the_app_carries_the_headers(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<h1>desk</h1>")
    world = World(static_dir=tmp_path, limits=DeskLimits(rate=1.0, burst=1, max_body=100))
    await world.room("room", "alice")
    pending_id = await world.ask()
    async with world.client() as client:
        page = await client.get("/")
        missing_file = await client.get("/nothing-here.js")
        api = {
            "ok": await client.get("/api/me", headers=bearer("alice")),
            "401": await client.get("/api/me"),
            "404": await client.get("/api/requests/nope", headers=bearer("bob")),
            "405": await client.delete(f"/api/requests/{pending_id}", headers=bearer("bob")),
            "413": await client.post(
                f"/api/requests/{pending_id}/reject", content=b"x" * 101, headers=bearer("carol")
            ),
            "429": await client.get("/api/me", headers=bearer("alice")),
            "schema": await client.get("/api/openapi.json"),
        }
    assert (page.status_code, missing_file.status_code) == (200, 404)
    statuses = {name: response.status_code for name, response in api.items()}
    assert statuses == {name: int(name) if name.isdigit() else 200 for name in api}
    for response in (page, missing_file):
        assert carries(response, SECURITY), response.headers
    for name, response in api.items():
        assert carries(response, API), (name, response.headers)


async def test_a_500_carries_the_headers() -> None:
    world = World(static_dir="/nonexistent")
    world.app.add_api_route("/api/boom", boom)
    world.app.add_api_route("/boom", boom)
    transport = httpx.ASGITransport(app=world.app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        api = await client.get("/api/boom")
        other = await client.get("/boom")
    assert (api.status_code, other.status_code) == (500, 500)
    assert carries(api, API), api.headers
    assert carries(other, SECURITY), other.headers


def embedded() -> tuple[FastAPI, HumanInputHandler]:
    """A host app of its own with the desk router in it, and a route of the router that fails."""
    handler = HumanInputHandler()
    router = desk_router(RoomKit(), handler=handler, secret=SECRET)
    router.add_api_route("/boom", boom)
    app = FastAPI()

    @app.get("/hello")
    def hello() -> PlainTextResponse:
        return PlainTextResponse("hi", headers={"cache-control": "max-age=60"})

    app.include_router(router)
    app.include_router(router, prefix="/v2")
    return app, handler


@pytest.mark.parametrize("prefix", ["", "/v2"])
async def test_the_embedded_router_sets_the_headers_on_its_own_routes_only(prefix: str) -> None:
    app, handler = embedded()
    request = await handler.create("AskUserQuestion", {"question": "?"}, actor_id="alice")
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        desk = {
            "ok": await client.get(f"{prefix}/api/requests", headers=bearer("alice")),
            "401": await client.get(f"{prefix}/api/me"),
            "404": await client.get(f"{prefix}/api/requests/nope", headers=bearer("alice")),
            "405": await client.put(f"{prefix}/api/requests/{request.pending_id}"),
            "400": await client.post(
                f"{prefix}/api/requests/{request.pending_id}/answer",
                content=b"[",
                headers=bearer("alice"),
            ),
            "500": await client.get(f"{prefix}/api/boom"),
        }
        own = await client.get("/hello")
        unknown = await client.get("/api/unknown")
    statuses = {name: response.status_code for name, response in desk.items()}
    assert statuses == {name: int(name) if name.isdigit() else 200 for name in desk}
    for name, response in desk.items():
        assert carries(response, API), (name, response.headers)
    assert own.text == "hi"
    assert own.headers["cache-control"] == "max-age=60"
    for response in (own, unknown):
        assert "content-security-policy" not in response.headers
        assert "x-content-type-options" not in response.headers

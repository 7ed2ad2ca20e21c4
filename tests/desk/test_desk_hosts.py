"""The desk answers only to its own names: a foreign ``Host`` (DNS rebinding) is refused."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import websockets
from desk_harness import SECRET, World, bearer, serve, token, ws_url
from fastapi import FastAPI
from websockets.asyncio.client import connect

from roomkit import RoomKit
from roomkit.desk import desk_router
from roomkit.desk.limits import HostRule
from roomkit.tools.human_input import HumanInputHandler

CSP_NAME = "content-security-policy"


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8765", True),
        ("10.1.2.3", True),
        ("[::1]:8765", True),
        ("localhost:8765", True),
        ("LocalHost.", True),
        ("desk.localhost", True),
        ("desk.test", True),  # the name the server gives for itself
        (None, True),
        ("evil.example:8765", False),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example", False),
        ("evil.example@127.0.0.1", False),
        ("", False),
    ],
)
def test_the_default_rule_takes_addresses_localhost_and_the_servers_name(
    host: str | None, allowed: bool
) -> None:
    assert HostRule().allows(host, ("desk.test", 80)) is allowed


def test_allowed_hosts_add_names_and_a_star_takes_all() -> None:
    rule = HostRule(["Desk.Example.com."])
    assert rule.allows("desk.example.com:443")
    assert not rule.allows("example.com")
    assert HostRule(["*"]).allows("anything.example")


@pytest.mark.parametrize("entry", ["desk.example.com:80", "https://desk.example.com", "", "a b"])
def test_an_allowed_host_that_is_not_a_name_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="allowed_hosts"):
        HostRule([entry])


def test_one_string_for_allowed_hosts_is_refused() -> None:
    with pytest.raises(TypeError, match=r"\['desk.example.com'\]"):
        HostRule("desk.example.com")


async def test_a_foreign_host_gets_400_on_the_api_and_the_page(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<h1>desk</h1>")
    world = World(static_dir=tmp_path)
    foreign = {"Host": "evil.example:8765"}
    async with world.client() as client:
        refused = [
            await client.get("/api/me", headers={**bearer("alice"), **foreign}),
            await client.get("/", headers=foreign),
            await client.get("/api/openapi.json", headers=foreign),
        ]
        accepted = [
            await client.get("/api/me", headers={**bearer("alice"), "Host": name})
            for name in ("desk.test", "127.0.0.1:8765", "localhost:8765", "[::1]:8765")
        ]
    for response in refused:
        assert response.status_code == 400
        assert "allowed_hosts" in response.json()["detail"]
        assert CSP_NAME in response.headers
    assert [response.status_code for response in accepted] == [200] * 4


async def test_allowed_hosts_let_a_name_of_ones_own_in() -> None:
    world = World(allowed_hosts=["desk.example.com"])
    async with world.client() as client:
        named = await client.get("/api/me", headers={**bearer("alice"), "Host": "desk.example.com"})
        other = await client.get("/api/me", headers={**bearer("alice"), "Host": "evil.example"})
    assert (named.status_code, other.status_code) == (200, 400)


async def test_the_embedded_router_checks_host_on_its_routes_only() -> None:
    app = FastAPI()

    @app.get("/hello")
    def hello() -> str:
        return "hi"

    app.include_router(desk_router(RoomKit(), secret=SECRET, handler=HumanInputHandler()))
    transport = httpx.ASGITransport(app=app)
    foreign = {"Host": "evil.example"}
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        desk = await client.get("/api/me", headers={**bearer("alice"), **foreign})
        own = await client.get("/hello", headers=foreign)
    assert desk.status_code == 400
    assert CSP_NAME in desk.headers
    assert own.status_code == 200


async def test_a_rebound_name_cannot_open_the_websocket_or_call_the_api() -> None:
    """A page on a name re-pointed at the desk's address: same origin as its Host, refused."""
    world = World()
    async with serve(world.app) as base:
        port = int(base.rsplit(":", 1)[1])
        rebound = f"http://evil.example:{port}"
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(
                ws_url(rebound),
                origin=rebound,  # type: ignore[arg-type]
                host="127.0.0.1",
                port=port,
            ):
                pass
        async with httpx.AsyncClient(base_url=base) as client:
            api = await client.get(
                "/api/me", headers={**bearer("alice"), "Host": f"evil.example:{port}"}
            )
        async with connect(ws_url(f"http://localhost:{port}"), host="127.0.0.1") as ws:
            await ws.send(f'{{"type": "auth", "token": "{token("alice")}"}}')
            assert "snapshot" in await ws.recv()
    assert refused.value.response.status_code == 403
    assert api.status_code == 400

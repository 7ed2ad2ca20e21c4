"""The desk app and router: the page, its headers, the schema, embedding, store URLs."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from desk_harness import SECRET, World, bearer
from fastapi import FastAPI

from roomkit import HumanInputToolHandler, RoomKit
from roomkit.core.store import InMemoryStore
from roomkit.desk import DeskRouter, create_desk_app, default_handler, desk_router, open_stores
from roomkit.desk.app import CONTENT_SECURITY_POLICY
from roomkit.tools.human_input import HumanInputHandler, MemoryStore

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


async def test_the_page_is_served_with_a_strict_policy(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<h1>desk</h1>")
    world = World(static_dir=tmp_path)
    async with world.client() as client:
        page = await client.get("/")
        api = await client.get("/api/me", headers=bearer("alice"))
        refused = await client.get("/api/me")
    assert page.text == "<h1>desk</h1>"
    for response in (page, api, refused):
        assert response.headers["content-security-policy"] == CSP
        assert response.headers["x-content-type-options"] == "nosniff"
    assert CONTENT_SECURITY_POLICY == CSP


async def test_a_missing_page_folder_leaves_only_the_api(tmp_path: Path) -> None:
    world = World(static_dir=tmp_path / "absent")
    async with world.client() as client:
        assert (await client.get("/")).status_code == 404
        assert (await client.get("/api/me", headers=bearer("a"))).status_code == 200


async def test_the_schema_documents_the_bodies_and_errors() -> None:
    async with World().client() as client:
        schema = (await client.get("/api/openapi.json")).json()
    answer = schema["paths"]["/api/requests/{request_id}/answer"]["post"]
    body_ref = answer["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body_ref.endswith("/AnswerBody")
    assert {"200", "400", "401", "404", "409", "413", "422", "429"} <= set(answer["responses"])
    components = schema["components"]["schemas"]
    assert {"RequestView", "RequestList", "RejectBody", "MeView", "ErrorBody"} <= set(components)
    assert set(components["RequestView"]["properties"]) >= {"id", "kind", "status", "settled_by"}
    assert "HTTPBearer" in schema["components"]["securitySchemes"]


async def test_the_router_embeds_in_an_app_of_ones_own() -> None:
    kit = RoomKit()
    handler = HumanInputHandler()
    router = desk_router(kit, handler=handler, secret=SECRET)
    app = FastAPI()
    app.include_router(router)
    assert isinstance(router, DeskRouter)
    assert router.hub is router.desk.hub
    request = await handler.create("AskUserQuestion", {"question": "?"}, actor_id="alice")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        listed = await client.get("/api/requests", headers=bearer("alice"))
    assert [view["id"] for view in listed.json()["requests"]] == [request.pending_id]


def test_the_app_exposes_its_hub_for_a_chat_router() -> None:
    world = World()
    assert world.app.state.desk_hub is world.app.state.desk.hub


def test_the_default_handler_is_the_kits_only_routed_one() -> None:
    kit = RoomKit()
    with pytest.raises(ValueError, match="no human-input handler"):
        default_handler(kit)
    first, second = HumanInputToolHandler({"Ask"}), HumanInputToolHandler({"Ask"})
    kit.route_human_input(first.handler, "one")
    assert default_handler(kit) is first.handler
    assert create_desk_app(kit, secret=SECRET).state.desk.handler is first.handler
    kit.route_human_input(second.handler, "two")
    with pytest.raises(ValueError, match="2 human-input handlers"):
        default_handler(kit)


def test_a_non_authenticator_is_refused() -> None:
    with pytest.raises(TypeError, match="authenticate"):
        desk_router(RoomKit(), handler=HumanInputHandler(), auth="secret")  # type: ignore[arg-type]


def test_store_urls_name_memory_sqlite_and_redis(tmp_path: Path) -> None:
    from roomkit.stores.redis import RedisRoomStore, RedisStore
    from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore

    pending, rooms = open_stores("memory")
    assert isinstance(pending, MemoryStore)
    assert isinstance(rooms, InMemoryStore)
    pending, rooms = open_stores(f"sqlite:///{tmp_path}/desk.db")
    assert isinstance(pending, SQLiteStore)
    assert isinstance(rooms, SQLiteRoomStore)
    assert rooms.path == f"{tmp_path}/desk.db"
    pending, rooms = open_stores("redis://127.0.0.1:1/0")
    assert isinstance(pending, RedisStore)
    assert isinstance(rooms, RedisRoomStore)
    assert rooms.where == pending.where == "redis://127.0.0.1:1/0"
    for bad in ("mongodb://x", "sqlite:///", "mem"):
        with pytest.raises(ValueError, match="sqlite:///"):
            open_stores(bad)

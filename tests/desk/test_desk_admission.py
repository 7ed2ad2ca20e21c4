"""What a desk's gate keeps of a caller it admitted before the body was read: the caller is
its own to reuse, and an application's override of the gate still decides."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from desk_harness import ROOMY, SECRET, World, bearer
from fastapi import APIRouter, Depends, FastAPI
from tests.streamed_body import StreamedBody

from roomkit import RoomKit
from roomkit.auth.principal import Principal
from roomkit.desk import issue_token
from roomkit.desk.api import Desk
from roomkit.desk.limits import DeskLimits
from roomkit.desk.route_class import desk_route_class
from roomkit.tools.human_input import HumanInputHandler

OTHER_SECRET = "another-desk-secret-0123456789abcdef"


def two_desks() -> tuple[Desk, Desk, FastAPI]:
    """Two desks with their own keys, and an app whose routes need a token good on both."""
    one = Desk(RoomKit(), handler=HumanInputHandler(), secret=SECRET, limits=ROOMY)
    other = Desk(RoomKit(), handler=HumanInputHandler(), secret=OTHER_SECRET, limits=ROOMY)
    app = FastAPI()
    app.router.route_class = desk_route_class(DeskLimits())

    async def both(
        first: Principal = Depends(one.gate),  # noqa: B008  # FastAPI's own form
        second: Principal = Depends(other.gate),  # noqa: B008
    ) -> dict[str, str]:
        return {"first": first.actor_id, "second": second.actor_id}

    app.add_api_route("/both", both, methods=["GET", "POST"])

    return one, other, app


async def test_a_caller_one_desk_admitted_is_checked_by_another_desk_on_the_same_request() -> None:
    """The caller one gate admitted is that gate's: another desk's gate still checks the
    token against its own key, with or without a body."""
    _, _, app = two_desks()
    world = World()
    world.app = app
    async with world.client() as client:
        read = await client.get("/both", headers=bearer("alice"))
        posted = await client.post("/both", json={}, headers=bearer("alice"))
        good_on_both = {"Authorization": f"Bearer {issue_token(OTHER_SECRET, 'alice')}"}
        other_only = await client.get("/both", headers=good_on_both)
    assert (read.status_code, posted.status_code, other_only.status_code) == (401, 401, 401)
    assert "signed with this desk's key" in read.json()["detail"]


async def test_an_override_of_the_gate_decides_on_a_route_that_takes_a_body() -> None:
    """An application that overrides the desk's gate (its tests, a gate of its own) has the
    override admit the caller on every route, those with a body included."""
    world = World()
    await world.room("room", "alice")
    pending_id = await world.ask()
    desk: Desk = world.app.state.desk
    world.app.dependency_overrides[desk.gate] = lambda: Principal("alice")
    async with world.client() as client:
        me = await client.get("/api/me")
        rejected = await client.post(f"/api/requests/{pending_id}/reject", json={"reason": "no"})
    assert me.status_code == 200, me.text
    assert rejected.status_code == 200, rejected.text
    assert rejected.json()["status"] == "rejected"


def gated_by(where: str, desk: Desk) -> FastAPI:
    """An app whose ``POST /take`` reads a JSON body, behind ``desk``'s gate given ``where``:
    on the route, on its router, where the router is included, on the app, or where an
    outer router holding it is included."""
    gate: list[Any] = [Depends(desk.gate)]
    app = FastAPI(dependencies=gate if where == "app" else None)
    router = APIRouter(
        route_class=desk_route_class(DeskLimits()),
        dependencies=gate if where == "router" else None,
    )

    async def take(body: dict[str, Any]) -> dict[str, Any]:
        return body

    router.add_api_route(
        "/take", take, methods=["POST"], dependencies=gate if where == "route" else None
    )
    if where == "nested":
        outer = APIRouter()
        outer.include_router(router, dependencies=gate)
        app.include_router(outer)
    else:
        app.include_router(router, dependencies=gate if where == "include" else None)
    return app


@pytest.mark.parametrize("where", ["route", "router", "include", "app", "nested"])
async def test_a_gate_given_where_a_router_is_included_admits_before_the_body(where: str) -> None:
    """Wherever the desk's gate is given (the route, its router, ``include_router``, the
    app, an outer router's include), a caller without a token streaming a body far over the
    cap gets its 401 before one chunk is read; one with a token is served."""
    desk = Desk(RoomKit(), handler=HumanInputHandler(), secret=SECRET, limits=ROOMY)
    app = gated_by(where, desk)
    body = StreamedBody()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        refused = await client.post(
            "/take", content=body.chunks(), headers={"content-type": "application/json"}
        )
        served = await client.post("/take", json={"a": 1}, headers=bearer("alice"))
    assert (refused.status_code, body.taken) == (401, [])
    assert (served.status_code, served.json()) == (200, {"a": 1})

"""``GET /api/history``: the caller's recent outcomes from the store, with the answer or the
reason, only those the caller may see, on every store (memory, SQLite, Redis, PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
from desk_harness import SECRET, World, bearer
from tests.servers.plugin import HandlerFactory

from roomkit.core.exceptions import HumanInputTimeoutError
from roomkit.desk import issue_answer_link
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture
def handlers(make_handler: HandlerFactory) -> HandlerFactory:
    """A factory of handlers on one store (each its own connection, as processes have), on
    every store in turn."""
    return make_handler


async def world_on(handler: HumanInputHandler) -> World:
    world = World(handler=handler)
    await world.room("room", "alice", "bob")
    await world.room("other", "carol")
    return world


async def history(world: World, actor_or_token: str, **params: Any) -> list[dict[str, Any]]:
    admin = params.pop("admin", False)
    async with world.client() as client:
        response = await client.get(
            "/api/history", params=params, headers=bearer(actor_or_token, admin=admin)
        )
    assert response.status_code == 200, response.text
    requests: list[dict[str, Any]] = response.json()["requests"]
    return requests


async def post(world: World, path: str, body: dict[str, Any], actor: str = "alice") -> None:
    async with world.client() as client:
        response = await client.post(path, json=body, headers=bearer(actor))
    assert response.status_code == 200, response.text


async def test_the_history_holds_the_callers_outcomes_with_the_answer_or_the_reason(
    handlers: Any,
) -> None:
    world = await world_on(handlers())
    answered = await world.ask({"question": "Which city?"})
    declined = await world.ask({"action": "Book it"}, tool_name="ConfirmAction")
    refused = await world.ask({"question": "Budget?"}, actor_id=None)
    timed = await world.ask({"question": "Anyone?"})
    bobs = await world.ask(actor_id="bob")
    elsewhere = await world.ask(room_id="other", actor_id=None)
    await post(world, f"/api/requests/{answered}/answer", {"answer": "Lisbon"})
    await post(
        world, f"/api/requests/{declined}/answer", {"confirmed": False, "reason": "too pricey"}
    )
    await post(world, f"/api/requests/{refused}/reject", {"reason": "not mine"}, actor="bob")
    await post(world, f"/api/requests/{bobs}/answer", {"answer": "red"}, actor="bob")
    await post(world, f"/api/requests/{elsewhere}/answer", {"answer": "x"}, actor="carol")
    with pytest.raises(HumanInputTimeoutError):
        await world.handler.wait(timed, timeout=0.01)

    # The desk restarted: what it shows comes from the store.
    listed = await history(await world_on(handlers()), "alice")

    assert [view["id"] for view in listed] == [timed, refused, declined, answered]
    views = {view["id"]: view for view in listed}
    assert (views[answered]["status"], views[answered]["result"]) == ("resolved", "Lisbon")
    assert views[answered]["settled_by"] == "alice"
    assert views[declined]["result"] == '{"confirmed":false,"reason":"too pricey"}'
    assert (views[refused]["status"], views[refused]["reason"]) == ("rejected", "not mine")
    assert views[refused]["settled_by"] == "bob"
    assert views[timed]["status"] == "timed_out"


async def test_each_caller_sees_only_what_they_could_see(handlers: Any) -> None:
    world = await world_on(handlers())
    mine = await world.ask()
    room_wide = await world.ask(actor_id=None)
    other_room = await world.ask(room_id="other", actor_id=None)
    for request_id in (mine, room_wide, other_room):
        assert await world.handler.aresolve(request_id, "done")
    still_open = await world.ask()

    alice = [view["id"] for view in await history(world, "alice")]
    bob = [view["id"] for view in await history(world, "bob")]
    carol = [view["id"] for view in await history(world, "carol")]
    mallory = await history(world, "mallory")
    root = [view["id"] for view in await history(world, "root", admin=True)]

    assert alice == [room_wide, mine]
    assert bob == [room_wide]
    assert carol == [other_room]
    assert mallory == []
    assert root[:3] == [other_room, room_wide, mine]
    assert still_open not in root


async def test_an_answer_link_sees_its_own_request_once_settled() -> None:
    world = await world_on(HumanInputHandler())
    asked = await world.ask()
    other = await world.ask()
    assert await world.handler.aresolve(other, "x")
    link = issue_answer_link(SECRET, asked, "alice", 600)

    assert await history(world, link) == []
    await post(world, f"/api/requests/{asked}/answer", {"answer": "yes"})
    assert [view["id"] for view in await history(world, link)] == [asked]


async def test_the_limit_keeps_the_newest_and_is_bounded() -> None:
    world = await world_on(HumanInputHandler())
    made = [await world.ask() for _ in range(3)]
    for request_id in made:
        assert await world.handler.aresolve(request_id, "ok")

    assert [view["id"] for view in await history(world, "alice", limit=2)] == made[:0:-1]
    async with world.client() as client:
        for limit in (0, 51, "many"):
            response = await client.get(
                "/api/history", params={"limit": limit}, headers=bearer("alice")
            )
            assert response.status_code == 422
            assert "limit" in response.json()["detail"]
        assert (await client.get("/api/history")).status_code == 401


async def test_other_rooms_settled_questions_do_not_crowd_the_callers_own_out(
    handlers: HandlerFactory,
) -> None:
    world = await world_on(handlers())
    mine = await world.handler.create("AskUserQuestion", {"question": "Mine"}, actor_id="alice")
    await world.handler.aresolve(mine.pending_id, "done")
    for n in range(60):  # asked of another room's people, settled later
        other = await world.handler.create(
            "AskUserQuestion", {"question": f"Ops {n}"}, room_id="ops"
        )
        await world.handler.aresolve(other.pending_id, "ok")
    shown = await history(world, "alice", limit=10)
    assert [view["id"] for view in shown] == [mine.pending_id]

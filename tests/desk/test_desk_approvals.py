"""Approvals on the desk: decisions as the builders' JSON, approvers only, and the history."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from desk_harness import World, bearer

from roomkit.tools.approvals import approve, edit, reject, respond
from roomkit.tools.human_input.checks import MAX_ARGUMENTS_DEPTH, MAX_NUMBER_CHARS

SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "amount": {"type": "integer"}},
    "required": ["to", "amount"],
    "additionalProperties": False,
}
ARGS = {"to": "bob", "amount": 120}


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice", "bob", "carol")
    return world


async def hold(world: World, approvers: tuple[str, ...] = ("alice", "bob")) -> str:
    request = await world.handler.create_approval(
        "transfer_money",
        dict(ARGS),
        approvers=approvers,
        tool_schema=SCHEMA,
        room_id="room",
        actor_id="alice",
        channel_id="agent",
    )
    return request.pending_id


async def post(world: World, pending_id: str, body: Any, actor: str = "alice") -> Any:
    async with world.client() as client:
        return await client.post(
            f"/api/requests/{pending_id}/answer", json=body, headers=bearer(actor)
        )


async def test_the_view_shows_an_approval_with_its_digest_and_approvers(world: World) -> None:
    pending_id = await hold(world)
    async with world.client() as client:
        view = (await client.get(f"/api/requests/{pending_id}", headers=bearer("bob"))).json()
    assert view["kind"] == "approval"
    assert view["arguments"] == ARGS
    assert view["approvers"] == ["alice", "bob"]
    assert view["answer_schema"] == SCHEMA
    request = await world.handler.get_request(pending_id)
    assert request is not None
    assert view["arguments_digest"] == request.arguments_digest


@pytest.mark.parametrize(
    "body",
    [
        {"decision": "approve"},
        {"decision": "edit", "arguments": {"to": "carol", "amount": 90}},
        {"decision": "reject", "reason": "too much"},
        {"decision": "respond", "result": "done by hand"},
    ],
    ids=["approve", "edit", "reject", "respond"],
)
async def test_an_approver_decides_with_the_builders_json(world: World, body: Any) -> None:
    pending_id = await hold(world)
    response = await post(world, pending_id, body, actor="bob")
    assert response.status_code == 200, response.text
    assert response.json()["settled_by"] == "bob"
    decided, settled = (await world.handler.history(pending_id))[-2:]
    assert (decided["type"], decided["decision"]) == ("decided", body["decision"])
    assert (decided["actor"], decided["surface"]) == ("bob", "desk")
    assert (settled["type"], settled["actor"], settled["surface"]) == ("settled", "bob", "desk")


@pytest.mark.parametrize(
    "body",
    [
        {"answer": "yes"},
        {"decision": "approve", "reason": "extra"},
        {"decision": "edit", "arguments": {"to": "carol"}},
        {"decision": "edit", "arguments": {"to": "carol", "amount": "lots"}},
        {"decision": "maybe"},
    ],
    ids=["question-shape", "extra-field", "edit-missing", "edit-wrong-type", "unknown"],
)
async def test_a_bad_decision_gets_422_and_leaves_the_request_open(world: World, body: Any) -> None:
    pending_id = await hold(world)
    response = await post(world, pending_id, body)
    assert response.status_code == 422, response.text
    request = await world.handler.get_request(pending_id)
    assert request is not None
    assert request.status == "pending"


async def test_someone_who_is_no_approver_gets_403(world: World) -> None:
    pending_id = await hold(world, approvers=("bob",))
    response = await post(world, pending_id, {"decision": "approve"}, actor="alice")
    assert response.status_code == 403
    async with world.client() as client:
        rejected = await client.post(
            f"/api/requests/{pending_id}/reject", json={"reason": "no"}, headers=bearer("alice")
        )
    assert rejected.status_code == 403
    request = await world.handler.get_request(pending_id)
    assert request is not None
    assert request.status == "pending"


async def test_a_settled_approval_gets_409(world: World) -> None:
    pending_id = await hold(world)
    assert await world.handler.aresolve(pending_id, approve(), by="alice")
    response = await post(world, pending_id, {"decision": "reject", "reason": "late"}, "bob")
    assert response.status_code == 409


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (approve(), "Already approved by alice"),
        (edit({"to": "carol", "amount": 90}), "Already approved with changes by alice"),
        (reject("too much"), "Already rejected by alice: too much"),
        (respond("done by hand"), "Already answered instead by alice"),
        (None, "Already rejected by alice: too much"),
    ],
    ids=["approve", "edit", "reject", "respond", "refused"],
)
async def test_a_409_on_a_settled_approval_says_how_it_was_decided(
    world: World, decision: str | None, said: str
) -> None:
    pending_id = await hold(world)
    if decision is None:
        assert await world.handler.areject(pending_id, "too much", by="alice")
    else:
        assert await world.handler.aresolve(pending_id, decision, by="alice")
    for body in ({"decision": "approve"}, {"decision": "reject", "reason": "late"}):
        response = await post(world, pending_id, body, "bob")
        assert (response.status_code, response.json()) == (409, {"detail": said})
    async with world.client() as client:
        refused = await client.post(
            f"/api/requests/{pending_id}/reject", json={"reason": "late"}, headers=bearer("bob")
        )
    assert (refused.status_code, refused.json()) == (409, {"detail": said})


async def test_the_loser_of_a_race_to_decide_is_told_how_the_winner_decided(world: World) -> None:
    """Both decide at once: whoever comes second gets 409 naming the first's decision."""
    pending_id = await hold(world)
    bodies = {"alice": {"decision": "approve"}, "bob": {"decision": "reject", "reason": "no"}}
    replies = await asyncio.gather(
        *(post(world, pending_id, body, actor) for actor, body in bodies.items())
    )
    won = [reply for reply in replies if reply.status_code == 200]
    lost = [reply for reply in replies if reply.status_code == 409]
    assert (len(won), len(lost)) == (1, 1), [reply.text for reply in replies]
    winner = won[0].json()["settled_by"]
    verb = "approved" if winner == "alice" else "rejected"
    assert lost[0].json() == {"detail": f"Already {verb} by {winner}"}


async def test_the_history_is_shown_to_who_may_see_the_request(world: World) -> None:
    pending_id = await hold(world)
    await post(world, pending_id, {"decision": "approve"}, actor="bob")
    async with world.client() as client:
        seen = await client.get(f"/api/requests/{pending_id}/history", headers=bearer("alice"))
        hidden = await client.get(f"/api/requests/{pending_id}/history", headers=bearer("carol"))
    assert seen.status_code == 200
    assert [entry["type"] for entry in seen.json()["entries"]] == ["created", "decided", "settled"]
    assert hidden.status_code == 404


async def test_a_person_a_question_is_escalated_to_may_see_and_answer_it(world: World) -> None:
    pending_id = await world.ask(actor_id="alice")
    async with world.client() as client:
        hidden = await client.get(f"/api/requests/{pending_id}", headers=bearer("dave"))
        assert hidden.status_code == 404
        assert await world.handler.add_approvers(pending_id, ["dave"], surface="ladder")
        view = await client.get(f"/api/requests/{pending_id}", headers=bearer("dave"))
        assert view.status_code == 200, view.text
        assert (view.json()["kind"], view.json()["approvers"]) == ("question", ["alice", "dave"])
        listed = await client.get("/api/requests", headers=bearer("dave"))
        assert [r["id"] for r in listed.json()["requests"]] == [pending_id]
    # The asker may still answer, as may the person added.
    response = await post(world, pending_id, {"answer": "red"}, actor="dave")
    assert response.status_code == 200, response.text
    assert response.json()["settled_by"] == "dave"


def _nested(levels: int) -> dict[str, Any]:
    value: Any = 10**MAX_NUMBER_CHARS - 1
    for _ in range(levels - 1):
        value = [value]
    return {"tree": value}


async def test_arguments_at_the_limits_are_shown_and_an_edit_sends_them_back(world: World) -> None:
    """The deepest arguments and longest numbers a request keeps fit in the body of an edit:
    the desk takes them back as shown."""
    arguments = _nested(MAX_ARGUMENTS_DEPTH)
    request = await world.handler.create_approval(
        "transfer_money", arguments, approvers=["bob"], tool_schema={"type": "object"}
    )
    async with world.client() as client:
        view = await client.get(f"/api/requests/{request.pending_id}", headers=bearer("bob"))
    assert view.json()["arguments"] == arguments

    body = {"decision": "edit", "arguments": {**arguments, "n": -(10**99) + 1}}
    response = await post(world, request.pending_id, body, actor="bob")

    assert response.status_code == 200, response.text
    decided = (await world.handler.history(request.pending_id))[-2]
    assert decided["arguments"] == body["arguments"]

"""Grants on the desk: granting while approving, listing and revoking (admin or granter)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.desk.desk_harness import SECRET, World, bearer

from roomkit import PendingInputStatus
from roomkit.auth import issue_answer_link

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


async def hold(world: World) -> Any:
    return await world.handler.create_approval(
        "transfer_money",
        dict(ARGS),
        approvers=("bob", "carol"),
        tool_schema=SCHEMA,
        room_id="room",
        actor_id="alice",
        channel_id="agent",
    )


async def call(world: World, method: str, path: str, actor: str, **options: Any) -> Any:
    admin = options.pop("admin", False)
    async with world.client() as client:
        return await client.request(method, path, headers=bearer(actor, admin=admin), **options)


async def test_approving_with_a_grant_lets_the_same_call_run_unasked(world: World) -> None:
    first = await hold(world)
    body = {"decision": "approve", "grant": {"expires_in": 3600, "max_uses": 1}}
    response = await call(
        world, "POST", f"/api/requests/{first.pending_id}/answer", "bob", json=body
    )
    assert response.status_code == 200, response.text
    again = await hold(world)
    assert again.status is PendingInputStatus.RESOLVED
    assert again.settled_by.startswith("grant:")
    assert (await hold(world)).status is PendingInputStatus.PENDING


async def test_an_answer_link_neither_lists_nor_revokes_its_persons_grants(world: World) -> None:
    first = await hold(world)
    body = {"decision": "approve", "grant": {"expires_in": 3600}}
    await call(world, "POST", f"/api/requests/{first.pending_id}/answer", "bob", json=body)
    (grant,) = (await call(world, "GET", "/api/grants", "bob")).json()["grants"]
    # A link bob was sent for another question (forwarded, say) is good for that one only.
    other = await world.handler.create("AskUserQuestion", {"question": "Lunch?"}, actor_id="bob")
    link = issue_answer_link(SECRET, other.pending_id, "bob")
    listed = await call(world, "GET", "/api/grants", link)
    assert listed.status_code == 403
    assert "sign in to the desk" in listed.json()["detail"]
    revoked = await call(world, "POST", f"/api/grants/{grant['grant_id']}/revoke", link)
    assert revoked.status_code == 403
    (kept,) = (await call(world, "GET", "/api/grants", "bob")).json()["grants"]
    assert kept["state"] == "live"


async def test_an_answer_link_approves_but_grants_nothing(world: World) -> None:
    """A link speaks for its one question: a standing grant would speak for its person
    beyond it, for months."""
    first = await hold(world)
    link = issue_answer_link(SECRET, first.pending_id, "bob")
    body = {"decision": "approve", "grant": {"expires_in": 3600}}
    refused = await call(world, "POST", f"/api/requests/{first.pending_id}/answer", link, json=body)
    assert refused.status_code == 403
    assert "sign in to the desk" in refused.json()["detail"]
    assert (await world.handler.get_request(first.pending_id)).status is PendingInputStatus.PENDING
    approved = await call(
        world,
        "POST",
        f"/api/requests/{first.pending_id}/answer",
        link,
        json={"decision": "approve"},
    )
    assert approved.status_code == 200, approved.text
    assert (await call(world, "GET", "/api/grants", "root", admin=True)).json()["grants"] == []


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}], "properties": {"amount": {"maximum": 500}}},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    ],
)
async def test_a_grant_whose_schema_refers_to_itself_is_told_so(
    world: World, schema: dict[str, Any]
) -> None:
    """A ``$ref`` loop is the schema's fault, not the arguments': the 422 says which."""
    first = await hold(world)
    body = {"decision": "approve", "grant": {"expires_in": 60, "schema": schema}}
    path = f"/api/requests/{first.pending_id}/answer"
    response = await call(world, "POST", path, "bob", json=body)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert "the grant's schema refers to itself without end" in detail
    assert "nest" not in detail
    stored = await world.handler.get_request(first.pending_id)
    assert stored is not None
    assert stored.status is PendingInputStatus.PENDING


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": ["to"], "required": ["to"]},
        {"required": ["to"], "items": 3},
        {"$defs": [1], "required": ["to"]},
        {"$schema": 5, "required": ["to"]},
        {"$schema": ["draft"], "required": ["to"]},
    ],
)
async def test_a_grant_whose_schema_is_no_json_schema_is_told_so(
    world: World, schema: dict[str, Any]
) -> None:
    """A schema of the wrong shape is the granting person's to fix: a 422 naming the grant's
    schema, and nothing is decided."""
    first = await hold(world)
    body = {"decision": "approve", "grant": {"expires_in": 60, "schema": schema}}
    path = f"/api/requests/{first.pending_id}/answer"
    response = await call(world, "POST", path, "bob", json=body)
    assert response.status_code == 422, response.text
    assert "the grant's schema" in response.json()["detail"]
    stored = await world.handler.get_request(first.pending_id)
    assert stored is not None
    assert stored.status is PendingInputStatus.PENDING


async def test_a_grant_the_approval_cannot_make_decides_nothing(world: World) -> None:
    first = await hold(world)
    path = f"/api/requests/{first.pending_id}/answer"
    for grant, problem in [
        ({"expires_in": 0}, "always ends"),
        ({"expires_in": 60, "schema": {"properties": {"amount": {"maximum": 100}}}}, "cover"),
        ({"expires_in": 60, "forever": True}, "forever"),
    ]:
        body = {"decision": "approve", "grant": grant}
        response = await call(world, "POST", path, "bob", json=body)
        assert response.status_code == 422, response.text
        assert problem in response.json()["detail"]
    reject = {"decision": "reject", "reason": "no", "grant": {"expires_in": 60}}
    response = await call(world, "POST", path, "bob", json=reject)
    assert response.status_code == 422
    assert "approve decision only" in response.json()["detail"]
    request = await world.handler.get_request(first.pending_id)
    assert request is not None
    assert request.status is PendingInputStatus.PENDING


async def test_grants_are_listed_to_their_granter_and_admins_and_revoked(world: World) -> None:
    first = await hold(world)
    body = {"decision": "approve", "grant": {"expires_in": 3600}}
    await call(world, "POST", f"/api/requests/{first.pending_id}/answer", "bob", json=body)
    listed = (await call(world, "GET", "/api/grants", "bob")).json()["grants"]
    assert listed[0]["schema"] is None
    assert listed[0]["digest"] == first.arguments_digest
    assert [(g["tool"], g["granted_by"], g["state"]) for g in listed] == [
        ("transfer_money", ["bob"], "live")
    ]
    grant_id = listed[0]["grant_id"]
    assert (await call(world, "GET", "/api/grants", "carol")).json()["grants"] == []
    admin_view = await call(world, "GET", "/api/grants?live=true", "root", admin=True)
    assert [g["grant_id"] for g in admin_view.json()["grants"]] == [grant_id]
    revoke = f"/api/grants/{grant_id}/revoke"
    assert (await call(world, "POST", revoke, "carol")).status_code == 404
    revoked = await call(world, "POST", revoke, "bob")
    assert revoked.status_code == 200, revoked.text
    assert (revoked.json()["state"], revoked.json()["revoked_by"]) == ("revoked", "bob")
    assert (await call(world, "POST", revoke, "root", admin=True)).status_code == 409
    # A path that is no grant id at all (a control character) is no grant: 404, not 500.
    control = await call(world, "POST", "/api/grants/%1F/revoke", "root", admin=True)
    assert control.status_code == 404
    assert (await hold(world)).status is PendingInputStatus.PENDING

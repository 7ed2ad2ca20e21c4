"""A grant whose tool, scope or people hold a NUL is made, covers and is revoked on every
store (PostgreSQL text holds no NUL as it is); a scope holding text UTF-8 cannot encode is
refused when it is made, and a grant or a revoke holding such text by every store before it
writes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from tests.grants.conftest import HandlerMaker
from tests.grants.test_grant_flow import PAY_SCHEMA

from roomkit import PendingInputStatus
from roomkit.core.exceptions import InvalidTextError
from roomkit.policy.grants import GrantRefusedError, GrantScope, approve_and_grant
from roomkit.stores.grants import Grant, GrantStore
from roomkit.tools.human_input import HumanInputHandler

TOOL = "pa\x00y"
PAY = {"to": "b\x00ob", "amount": 40}


async def held(handler: HumanInputHandler, arguments: dict[str, Any]) -> Any:
    """The approval of a call of :data:`TOOL` by an actor, in a room, both holding a NUL."""
    return await handler.create_approval(
        TOOL,
        arguments,
        approvers=("ann",),
        tool_schema=PAY_SCHEMA,
        room_id="r\x00",
        channel_id="agent",
        actor_id="agent\x00",
        timeout=600,
    )


async def test_a_grant_on_a_tool_whose_name_holds_a_nul_covers_its_calls(
    handlers: HandlerMaker,
) -> None:
    handler = handlers()
    first = await held(handler, PAY)
    narrow = {"properties": {"to": {"const": "b\x00ob"}, "amount": {"maximum": 100}}}
    scope = GrantScope(expires_in=3600, schema=narrow, for_room=True)

    accepted, grant = await approve_and_grant(handler, first.pending_id, scope, by="ann")

    assert accepted
    assert grant is not None
    assert (grant.tool, grant.actor_id, grant.room_id) == (TOOL, "agent\x00", "r\x00")
    again = handlers()
    assert [g.grant_id for g in await again.grants.list(tool=TOOL, live=True)] == [grant.grant_id]
    assert (await again.grants.get(grant.grant_id)) == grant
    assert (
        await held(again, {"to": "b\x00ob", "amount": 99})
    ).status is PendingInputStatus.RESOLVED
    assert (await held(again, {"to": "bob", "amount": 1})).status is PendingInputStatus.PENDING


async def test_a_grant_revoked_by_a_name_holding_a_nul_says_who(handlers: HandlerMaker) -> None:
    handler = handlers()
    first = await held(handler, PAY)
    _, grant = await approve_and_grant(handler, first.pending_id, GrantScope(60), by="ann")
    assert grant is not None

    assert await handler.grants.revoke(grant.grant_id, by="admin\x00")

    revoked = await handlers().grants.get(grant.grant_id)
    assert revoked is not None
    assert revoked.revoked_by == "admin\x00"
    assert await handler.grants.list(tool=TOOL, live=True) == []


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (
            {"properties": {"to": {"enum": ["bob", "b\udc80"]}}},
            "character 1 of 'properties.to.enum[1]'",
        ),
        ({"properties": {"t\ud800": {"maximum": 1}}}, "character 1 of a key in 'properties'"),
        ({"required": ["to"], "description": "\udc80"}, "character 0 of 'description'"),
        ({"properties": {"to": {"pattern": "^b\udc80$"}}}, "of 'properties.to.pattern'"),
    ],
    ids=["value", "key", "annotation", "pattern"],
)
def test_a_scope_whose_schema_holds_text_no_store_keeps_is_refused_when_made(
    schema: dict[str, Any], where: str
) -> None:
    """A lone surrogate is named where it stands, not when the grant's record is refused."""
    said = (
        r"^the grant's schema must be valid Unicode text, but holds a lone surrogate "
        rf"\(U\+D[0-9A-F]{{3}}\) at .*{re.escape(where)}"
    )
    with pytest.raises(GrantRefusedError, match=said):
        GrantScope(expires_in=60, schema=schema)
    with pytest.raises(GrantRefusedError, match=said):
        GrantScope.from_json({"expires_in": 60, "schema": schema})


LONE = "b\udc80"
"""A name holding a lone surrogate: what ``json.loads`` makes of the escape ``"\\udc80"``."""


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("tool", LONE, "tool"),
        ("granted_by", ("ann", LONE), "granted_by"),
        ("actor_id", LONE, "actor_id"),
        ("room_id", LONE, "room_id"),
        ("source", LONE, "source"),
        ("schema", {"properties": {"to": {"const": LONE}}}, "schema"),
        ("extra", {"note": LONE}, "extra"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.isascii() else "",
)
async def test_a_grant_holding_text_no_store_keeps_is_refused_before_it_is_written(
    grant_stores: Callable[[], GrantStore], field: str, value: object, where: str
) -> None:
    """Refused with the typed error every store raises for such text, on the memory store
    as on the others (SQLite raised ``UnicodeEncodeError``), and nothing is recorded."""
    grants = grant_stores()
    made = Grant("g-1", "pay", ("ann",), expires_at=4_000_000_000.0, digest="d" * 64)
    said = rf"^grant {where} cannot be stored: it holds a lone surrogate \(U\+DC80\) at"
    with pytest.raises(InvalidTextError, match=said):
        await grants.add(replace(made, **{field: value}))
    assert await grant_stores().get("g-1") is None
    assert (await grants.add(made)).grant_id == "g-1"


async def test_a_revoke_by_a_name_no_store_keeps_is_refused_before_it_is_written(
    grant_stores: Callable[[], GrantStore],
) -> None:
    grants = grant_stores()
    await grants.add(Grant("g-1", "pay", ("ann",), expires_at=4_000_000_000.0, digest="d" * 64))
    said = r"^the revoker's name cannot be stored: it holds a lone surrogate \(U\+DC80\) at"
    with pytest.raises(InvalidTextError, match=said):
        await grants.revoke("g-1", by=LONE)
    recorded = await grant_stores().get("g-1")
    assert recorded is not None
    assert recorded.revoked_at is None
    assert await grants.revoke("g-1", by="admin")

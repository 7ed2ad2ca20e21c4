"""A person approving grants the same again: later calls within it run without asking."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from tests.grants.conftest import HandlerMaker
from tests.grants.support import Clock

from roomkit import PendingInputStatus
from roomkit.core.exceptions import ArgumentsChangedError
from roomkit.models.pending_input import arguments_digest
from roomkit.policy.grants import GrantRefusedError, GrantScope, approve_and_grant
from roomkit.stores import check_trail
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

PAY_SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "amount": {"type": "integer"}},
    "required": ["to", "amount"],
    "additionalProperties": False,
}
PAY = {"to": "bob", "amount": 40}
_RESOLVED = PendingInputStatus.RESOLVED
_PENDING = PendingInputStatus.PENDING


async def held(
    handler: HumanInputHandler,
    arguments: dict[str, Any] | None = None,
    *,
    actor: str = "agent-7",
    approvers: tuple[str, ...] = ("ann",),
    quorum: int | None = None,
) -> Any:
    """The approval of a ``pay`` call, as the tool loop holds it."""
    return await handler.create_approval(
        "pay",
        dict(PAY if arguments is None else arguments),
        approvers=approvers,
        quorum=quorum,
        tool_schema=PAY_SCHEMA,
        room_id="r1",
        channel_id="agent",
        actor_id=actor,
        timeout=600,
    )


async def granted(handler: HumanInputHandler, scope: GrantScope, **options: Any) -> Any:
    """Ask once, and approve with ``scope`` granted; the grant."""
    first = await held(handler, **options)
    assert first.status is _PENDING
    accepted, grant = await approve_and_grant(handler, first.pending_id, scope, by="ann")
    assert accepted
    assert grant is not None
    return grant


async def test_a_call_within_the_grant_runs_without_asking(handlers: HandlerMaker) -> None:
    handler = handlers()
    grant = await granted(handler, GrantScope(expires_in=3600, max_uses=5))
    assert grant.digest is not None
    assert grant.granted_by == ("ann",)
    again = await held(handler)
    assert again.status is _RESOLVED
    assert again.settled_by == f"grant:{grant.grant_id}"
    assert await handler.wait(again.pending_id, timeout=1) == approve()
    history = await handler.history(again.pending_id)
    assert [entry["type"] for entry in history] == ["created", "grant_used", "decided", "settled"]
    used = history[1]
    assert (used["grant"], used["use"], used["granted_by"]) == (grant.grant_id, 1, ["ann"])
    assert used["source"] == grant.source
    source = await handler.history(grant.source)
    assert [entry["type"] for entry in source][-1] == "granted"


async def test_one_argument_outside_the_grant_asks(handlers: HandlerMaker) -> None:
    handler = handlers()
    await granted(handler, GrantScope(expires_in=3600))
    assert (await held(handler, {"to": "bob", "amount": 41})).status is _PENDING
    assert (await held(handler, actor="agent-8")).status is _PENDING
    assert (await held(handler)).status is _RESOLVED


async def test_a_schema_grant_covers_what_it_narrows_to(handlers: HandlerMaker) -> None:
    handler = handlers()
    narrow = {"properties": {"to": {"const": "bob"}, "amount": {"maximum": 100}}}
    grant = await granted(handler, GrantScope(expires_in=3600, schema=narrow, for_room=True))
    assert grant.digest is None
    assert grant.room_id == "r1"
    assert (await held(handler, {"to": "bob", "amount": 100})).status is _RESOLVED
    assert (await held(handler, {"to": "bob", "amount": 101})).status is _PENDING
    assert (await held(handler, {"to": "eve", "amount": 1})).status is _PENDING


async def test_a_grant_that_would_not_cover_the_call_approved_is_refused(
    handlers: HandlerMaker,
) -> None:
    handler = handlers()
    first = await held(handler)
    scope = GrantScope(expires_in=60, schema={"properties": {"amount": {"maximum": 10}}})
    with pytest.raises(GrantRefusedError, match="does not cover the call approved"):
        await approve_and_grant(handler, first.pending_id, scope, by="ann")
    assert (await handler.get_request(first.pending_id)).status is _PENDING
    with pytest.raises(GrantRefusedError, match="not an approver"):
        await approve_and_grant(handler, first.pending_id, GrantScope(expires_in=60), by="eve")


def test_a_scope_that_bounds_nothing_is_refused() -> None:
    with pytest.raises(GrantRefusedError, match="always ends"):
        GrantScope(expires_in=0)
    for nothing in (
        {"type": "object"},
        {"properties": {}},
        {"$id": "x", "default": 1, "examples": []},
        {"required": []},
        {"additionalProperties": True},
        {"anyOf": [{}, {"properties": {"amount": {"maximum": 10}}}]},
        {"properties": {"amount": {"description": "any amount"}}},
    ):
        with pytest.raises(GrantRefusedError, match="constrains nothing"):
            GrantScope(expires_in=60, schema=nothing)
    for bounded in (
        {"properties": {"amount": {"maximum": 10}}},
        {"required": ["amount"]},
        {"additionalProperties": False},
        {"anyOf": [{"properties": {"to": {"const": "bob"}}}]},
    ):
        assert GrantScope(expires_in=60, schema=bounded).schema == bounded
    with pytest.raises(GrantRefusedError, match="max_uses is a count from 1"):
        GrantScope(expires_in=60, max_uses=2**64)
    with pytest.raises(GrantRefusedError, match="for_actor or for_room"):
        GrantScope(expires_in=60, for_actor=False)
    with pytest.raises(GrantRefusedError, match="not \\['forever'\\]"):
        GrantScope.from_json({"expires_in": 60, "forever": True})


@pytest.mark.parametrize(
    ("schema", "refusal"),
    [
        ({"properties": {"amount": {"maxmum": 100}}}, "'maxmum'"),
        ({"properties": {"to": {"items": {"const": "x", "constt": 1}}}}, "'constt'"),
        ({"properties": {"to": {"format": "email"}}}, "constrains nothing"),
        ({"properties": {"to": {"contentMediaType": "text/plain"}}}, "constrains nothing"),
        ({"properties": {"amount": {"maximum": float("nan")}}}, "nan"),
        ({"properties": {"amount": {"maximum": float("inf")}}}, "inf"),
    ],
)
def test_a_scope_whose_schema_the_validator_would_not_check_is_refused(
    schema: dict[str, object], refusal: str
) -> None:
    """A misspelt keyword, an unchecked format or a number JSON cannot carry bounds nothing."""
    with pytest.raises(GrantRefusedError, match=refusal):
        GrantScope(expires_in=60, schema=schema)


async def test_an_expired_grant_asks(handlers: HandlerMaker, clock: Clock) -> None:
    handler = handlers()
    await granted(handler, GrantScope(expires_in=3600))
    clock.now += 3599
    assert (await held(handler)).status is _RESOLVED
    clock.now += 1
    assert (await held(handler)).status is _PENDING


async def test_a_used_up_grant_asks(handlers: HandlerMaker) -> None:
    handler = handlers()
    grant = await granted(handler, GrantScope(expires_in=3600, max_uses=2))
    assert (await held(handler)).status is _RESOLVED
    assert (await held(handler)).status is _RESOLVED
    assert (await held(handler)).status is _PENDING
    assert (await handler.grants.get(grant.grant_id)).uses == 2


async def test_a_grant_revoked_in_another_process_asks(handlers: HandlerMaker) -> None:
    mine, theirs = handlers(), handlers()
    grant = await granted(mine, GrantScope(expires_in=3600))
    assert (await held(mine)).status is _RESOLVED
    assert await theirs.grants.revoke(grant.grant_id, by="ann")
    assert (await held(mine)).status is _PENDING


async def test_a_quorum_grant_needs_the_quorum(handlers: HandlerMaker) -> None:
    handler = handlers()
    team = ("ann", "cy", "dee")
    scope = GrantScope(expires_in=3600)
    first = await held(handler, approvers=team, quorum=2)
    assert await approve_and_grant(handler, first.pending_id, scope, by="ann") == (True, None)
    accepted, grant = await approve_and_grant(handler, first.pending_id, scope, by="cy")
    assert accepted
    assert grant is not None
    assert (grant.granted_by, grant.quorum) == (("ann", "cy"), 2)
    again = await held(handler, approvers=team, quorum=2)
    assert again.status is _RESOLVED
    # It covers no call needing more approvals than made it.
    assert (await held(handler, approvers=team, quorum=3)).status is _PENDING


async def test_a_single_approvers_grant_does_not_cover_a_quorum_call(
    handlers: HandlerMaker,
) -> None:
    handler = handlers()
    await granted(handler, GrantScope(expires_in=3600), approvers=("ann", "cy"))
    assert (await held(handler, approvers=("ann", "cy"))).status is _RESOLVED
    assert (await held(handler, approvers=("ann", "cy"), quorum=2)).status is _PENDING


async def test_a_quorum_reached_without_every_offer_makes_no_grant(
    handlers: HandlerMaker,
) -> None:
    handler = handlers()
    team = ("ann", "cy")
    first = await held(handler, approvers=team, quorum=2)
    await handler.aresolve(first.pending_id, approve(), by="cy")
    with pytest.raises(GrantRefusedError, match=r"\['cy'\] approved without offering"):
        await approve_and_grant(handler, first.pending_id, GrantScope(expires_in=60), by="ann")
    assert (await handler.get_request(first.pending_id)).status is _RESOLVED
    assert await handler.grants.list() == []
    assert (await held(handler, approvers=team, quorum=2)).status is _PENDING


async def test_a_quorum_vote_granted_again_by_its_voter_is_a_vote_sent_again(
    handlers: HandlerMaker,
) -> None:
    """A voter whose vote and offer were written, but who never heard so (the process killed
    after the commit), runs ``approve_and_grant`` again from another process: told, as
    ``aresolve`` tells a vote sent again, that nothing was recorded, never that they are no
    approver; the vote and the offer stand once, and the quorum makes the grant."""
    team = ("ann", "ben", "cy")
    scope = GrantScope(expires_in=3600)
    first = await held(handlers(), approvers=team, quorum=2)
    pending_id = first.pending_id
    assert await approve_and_grant(handlers(), pending_id, scope, by="ann") == (True, None)
    handler = handlers()
    assert await approve_and_grant(handler, pending_id, scope, by="ann") == (False, None)
    accepted, grant = await approve_and_grant(handler, pending_id, scope, by="ben")
    assert accepted
    assert grant is not None
    assert grant.granted_by == ("ann", "ben")
    history = await handler.history(pending_id)
    assert [entry["type"] for entry in history] == [
        "created",
        *("grant_offered", "voted") * 2,
        "settled",
        "granted",
    ]


async def test_a_quorum_vote_refused_after_its_offer_offers_once_when_run_again(
    handlers: HandlerMaker,
) -> None:
    """A vote refused as it is written (here: cast on arguments its voter was not shown)
    leaves no ``grant_offered`` entry; run again, it offers once, and the quorum makes the
    grant, in a chain that verifies."""
    handler = handlers()
    team = ("ann", "cy")
    scope = GrantScope(expires_in=3600)
    first = await held(handler, approvers=team, quorum=2)
    pending_id = first.pending_id
    elsewhere = arguments_digest("pay", {"to": "eve", "amount": 40})
    with pytest.raises(ArgumentsChangedError):
        await approve_and_grant(handler, pending_id, scope, by="ann", digest=elsewhere)
    shown = first.arguments_digest
    again = await approve_and_grant(handler, pending_id, scope, by="ann", digest=shown)
    assert again == (True, None)
    accepted, grant = await approve_and_grant(handler, pending_id, scope, by="cy", digest=shown)
    assert accepted
    assert grant is not None
    assert grant.granted_by == ("ann", "cy")
    history = await handler.history(pending_id)
    offers = [entry["actor"] for entry in history if entry["type"] == "grant_offered"]
    assert offers == ["ann", "cy"]
    assert [entry["type"] for entry in history] == [
        "created",
        *("grant_offered", "voted") * 2,
        "settled",
        "granted",
    ]
    trail = handler.audit_trail
    assert trail is not None
    assert check_trail(await trail.read(), None, now=time.time()).problems == []


async def test_every_use_is_in_a_chain_that_verifies(handlers: HandlerMaker) -> None:
    handler = handlers()
    await granted(handler, GrantScope(expires_in=3600, max_uses=3))
    for _ in range(3):
        assert (await held(handler)).status is _RESOLVED
    trail = handler.audit_trail
    assert trail is not None
    read = await trail.read()
    assert check_trail(read, None, now=time.time()).problems == []
    uses = [
        json.loads(text)
        for chain in read.chains.values()
        for _, text in chain
        if json.loads(text)["type"] == "grant_used"
    ]
    assert sorted(entry["use"] for entry in uses) == [1, 2, 3]


async def test_grants_that_cannot_be_read_leave_the_call_to_a_person(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A grants table the store cannot read covers nothing: the person is asked."""
    path = tmp_path / "broken.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE roomkit_grants (grant_id TEXT PRIMARY KEY)")
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        with caplog.at_level(logging.ERROR, logger="roomkit.policy.grants"):
            request = await held(handler)
        assert request.status is _PENDING
        assert "could not be read: asking a person" in caplog.text

"""A delegate decides while the approver is away: on the desk, on the record, in a quorum."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import httpx
import pytest
from escalating import Recorder, told_on_escalation
from routing_clock import FakeClock
from tests.notify.slack_api import SIGNING_SECRET
from tests.servers.slack_clicks import click

from roomkit import RoomKit
from roomkit.desk import DeskLimits, create_desk_app, issue_token
from roomkit.notify import Notifier
from roomkit.people import Delegation, Directory, Person
from roomkit.stores._quorum import decode_votes, encode_votes
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

SECRET = "routing-tests-secret-0123456789abcdef"
STARTS = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
ENDS = datetime(2026, 12, 12, 9, 0, tzinfo=UTC)
SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer"}}}


def directory(tools: set[str] | None = None) -> Directory:
    return Directory(
        {
            "alice": Person(
                manager="mallory",
                delegations=[
                    Delegation(to="carol", starts=STARTS, ends=ENDS, tools=tools, reason="leave")
                ],
            ),
            "bob": Person(
                delegations=[Delegation(to="carol", starts=STARTS, ends=ENDS)],
            ),
        }
    )


def handler_on(clock: FakeClock, tools: set[str] | None = None) -> HumanInputHandler:
    handler = HumanInputHandler(directory=directory(tools))
    assert handler.router is not None
    handler.router.clock = clock
    return handler


def bearer(actor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, actor)}"}


def desk_client(handler: HumanInputHandler) -> httpx.AsyncClient:
    app = create_desk_app(
        RoomKit(), handler=handler, secret=SECRET, limits=DeskLimits(rate=1e6, burst=1_000_000)
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://desk.test")


async def test_the_delegate_decides_only_while_the_delegation_holds(clock: FakeClock) -> None:
    handler = handler_on(clock)
    router = handler.router
    assert router is not None
    request = await handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
    assert not await router.may_decide(request, "carol"), "before it starts"
    assert await router.status(request) is None
    clock.now = STARTS
    assert await router.may_decide(request, "carol")
    assert await router.may_decide(request, "alice"), "the approver may still decide"
    assert await router.recipients(request) == ("carol",)
    assert await router.status(request) == "Alice is away until 12 Dec; Carol is deciding"
    clock.now = ENDS
    assert not await router.may_decide(request, "carol"), "the end is not part of it"
    assert await router.recipients(request) == ("alice",)


async def test_a_delegates_answer_on_the_desk_is_recorded_on_behalf_of_the_approver(
    clock: FakeClock,
) -> None:
    clock.now = STARTS
    handler = handler_on(clock)
    request = await handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice"], tool_schema=SCHEMA
    )
    async with desk_client(handler) as client:
        listed = (await client.get("/api/requests", headers=bearer("carol"))).json()
        shown = await client.get(f"/api/requests/{request.pending_id}", headers=bearer("carol"))
        outsider = await client.post(
            f"/api/requests/{request.pending_id}/answer",
            json={"decision": "approve"},
            headers=bearer("dave"),
        )
        answered = await client.post(
            f"/api/requests/{request.pending_id}/answer",
            json={"decision": "approve"},
            headers=bearer("carol"),
        )
    assert [view["id"] for view in listed["requests"]] == [request.pending_id]
    assert shown.json()["routing"] == "Alice is away until 12 Dec; Carol is deciding"
    assert outsider.status_code == 404
    assert answered.status_code == 200, answered.text
    assert answered.json()["settled_by"] == "carol"
    assert answered.json()["approvers"] == ["alice"], "the approver of record stays"
    decided = [e for e in await handler.history(request.pending_id) if e["type"] == "decided"]
    assert decided[0]["actor"] == "carol"
    assert decided[0]["on_behalf_of"] == "alice"
    assert decided[0]["delegation_id"].startswith("dlg_")


async def test_a_delegation_narrower_than_the_tool_routes_nothing(clock: FakeClock) -> None:
    clock.now = STARTS
    handler = handler_on(clock, tools={"refund"})
    request = await handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice"], tool_schema=SCHEMA
    )
    assert handler.router is not None
    assert await handler.router.recipients(request) == ("alice",)
    async with desk_client(handler) as client:
        refused = await client.post(
            f"/api/requests/{request.pending_id}/answer",
            json={"decision": "approve"},
            headers=bearer("carol"),
        )
    assert refused.status_code == 404, "carol does not even see it"
    refund = await handler.create_approval("refund", {"amount": 5}, approvers=["alice"])
    assert await handler.router.may_decide(refund, "carol")


async def test_of_several_delegations_in_force_the_first_listed_covering_the_tool_decides(
    clock: FakeClock,
) -> None:
    clock.now = STARTS
    handler = HumanInputHandler(
        directory=Directory(
            {
                "alice": Person(
                    delegations=[
                        Delegation(to="dan", starts=STARTS, ends=ENDS, tools={"refund"}),
                        Delegation(to="carol", starts=STARTS, ends=ENDS),
                        Delegation(to="erin", starts=STARTS, ends=ENDS),
                    ]
                )
            }
        )
    )
    router = handler.router
    assert router is not None
    router.clock = clock
    pay = await handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
    refund = await handler.create_approval("refund", {"amount": 5}, approvers=["alice"])
    question = await handler.create("AskUserQuestion", {"question": "Go?"}, actor_id="alice")
    assert await router.recipients(pay) == ("carol",)
    assert await router.recipients(refund) == ("dan",)
    assert await router.recipients(question) == ("carol",), "a question: every tool's first"
    assert not await router.may_decide(pay, "erin"), "a later delegation in force decides nothing"
    assert not await router.may_decide(pay, "dan")
    assert not await router.may_decide(refund, "carol")


async def test_a_delegate_for_two_approvers_votes_once(clock: FakeClock) -> None:
    clock.now = STARTS
    handler = handler_on(clock)
    request = await handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice", "bob", "dave"], quorum=2
    )
    assert await handler.aresolve(request.pending_id, approve(), by="carol")
    again = await handler.aresolve(request.pending_id, approve(), by="carol")
    assert not again, "one person, one vote, however many they stand in for"
    current = await handler.get_request(request.pending_id)
    assert current is not None
    assert current.status.value == "pending"
    assert [(v.actor, v.on_behalf_of) for v in current.votes] == [("carol", "alice")]
    assert current.approvers == ("bob", "dave")
    assert not await handler.aresolve(request.pending_id, approve(), by="alice"), (
        "alice's vote was cast for her"
    )
    assert await handler.aresolve(request.pending_id, approve(), by="dave")
    assert await handler.wait(request.pending_id, timeout=1) == approve()
    voted = [e for e in await handler.history(request.pending_id) if e["type"] == "voted"]
    assert voted[0]["on_behalf_of"] == "alice"
    assert "delegation_id" in voted[0]
    assert "on_behalf_of" not in voted[1]
    settled = [e for e in await handler.history(request.pending_id) if e["type"] == "settled"]
    assert settled[0]["approvers"] == ["alice", "dave"]


async def test_the_desk_tells_an_approver_their_delegate_voted_for_them(clock: FakeClock) -> None:
    clock.now = STARTS
    handler = handler_on(clock)
    request = await handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice", "bob", "dave"], quorum=2
    )
    assert await handler.aresolve(request.pending_id, approve(), by="carol")
    async with desk_client(handler) as client:
        refused = await client.post(
            f"/api/requests/{request.pending_id}/answer",
            json={"decision": "approve", "digest": request.arguments_digest},
            headers=bearer("alice"),
        )
    assert refused.status_code == 403, refused.text
    assert refused.json()["detail"] == (
        "Your vote on this approval was cast by carol, who stands in for you: "
        "each approver votes once"
    )


async def test_nobody_votes_both_as_themself_and_as_a_delegate(clock: FakeClock) -> None:
    clock.now = STARTS
    handler = handler_on(clock)
    request = await handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice", "carol", "dave"], quorum=2
    )
    assert await handler.aresolve(request.pending_id, approve(), by="carol")
    assert not await handler.aresolve(request.pending_id, approve(), by="carol")
    current = await handler.get_request(request.pending_id)
    assert current is not None
    assert [(v.actor, v.on_behalf_of) for v in current.votes] == [("carol", None)]
    assert current.approvers == ("alice", "dave")


def test_votes_cast_as_oneself_are_encoded_as_before(clock: FakeClock) -> None:
    from roomkit.models.pending_input import Vote

    plain = Vote("bob", "approve", STARTS, "d" * 64, token="t")
    text = encode_votes((plain,))
    assert '"for"' not in text
    assert text == (
        '[{"actor":"bob","decision":"approve","at":"2026-12-02T09:00:00+00:00",'
        f'"digest":"{"d" * 64}","edited":null,"reason":null,"token":"t"}}]'
    )
    behalf = Vote("carol", "approve", STARTS, "d" * 64, token="u", on_behalf_of="alice")
    assert decode_votes(encode_votes((behalf,)))[0].principal == "alice"


async def test_escalation_goes_to_the_approvers_manager(clock: FakeClock) -> None:
    clock.now = STARTS
    handler = handler_on(clock)
    _, told = await told_on_escalation(
        handler, lambda: handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
    )
    assert ("question_pending", "carol") in told
    assert ("question_pending", "alice") not in told, "alice is away: carol is told"
    assert ("question_escalated", "mallory") in told


async def test_a_delegates_answer_to_a_question_names_whom_it_was_for(clock: FakeClock) -> None:
    clock.now = STARTS
    handler = handler_on(clock)
    asked = await handler.create("AskUserQuestion", {"question": "Ship it?"}, actor_id="bob")
    assert handler.router is not None
    assert await handler.router.recipients(asked) == ("carol",)
    assert await handler.aresolve(asked.pending_id, "yes", by="carol")
    settled = [e for e in await handler.history(asked.pending_id) if e["type"] == "settled"]
    assert settled[0]["actor"] == "carol"
    assert settled[0]["on_behalf_of"] == "bob"
    mine = await handler.create("AskUserQuestion", {"question": "Ship it?"}, actor_id="bob")
    assert await handler.aresolve(mine.pending_id, "no", by="bob")
    own = [e for e in await handler.history(mine.pending_id) if e["type"] == "settled"]
    assert "on_behalf_of" not in own[0]


async def test_the_desks_socket_pushes_a_new_request_to_the_delegate(clock: FakeClock) -> None:
    from tests.desk.desk_harness import SECRET as HARNESS_SECRET
    from tests.desk.desk_harness import next_frame, serve, socket_for

    clock.now = STARTS
    handler = handler_on(clock)
    app = create_desk_app(
        RoomKit(),
        handler=handler,
        secret=HARNESS_SECRET,
        limits=DeskLimits(rate=1e6, burst=1_000_000),
    )
    async with serve(app) as base, socket_for(base, "carol") as (carol, snapshot):
        assert snapshot == []
        request = await handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
        frame = await next_frame(carol, "question_pending")
    assert frame["request"]["id"] == request.pending_id
    assert frame["request"]["deciding"] == ["alice", "carol"]
    assert frame["request"]["routing"] == "Alice is away until 12 Dec; Carol is deciding"


async def test_an_answer_is_routed_when_it_arrives(clock: FakeClock) -> None:
    """Carol's answer is refused before the delegation starts, taken while it holds (for
    Alice), and refused again once it ended."""
    handler = handler_on(clock)
    early = await handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
    late = await handler.create_approval("pay", {"amount": 6}, approvers=["alice"])
    async with desk_client(handler) as client:

        async def carol_approves(request_id: str) -> int:
            answered = await client.post(
                f"/api/requests/{request_id}/answer",
                json={"decision": "approve"},
                headers=bearer("carol"),
            )
            return answered.status_code

        assert await carol_approves(early.pending_id) == 404
        clock.now = STARTS
        assert await carol_approves(early.pending_id) == 200
        clock.now = ENDS
        assert await carol_approves(late.pending_id) == 404
    decided = [e for e in await handler.history(early.pending_id) if e["type"] == "decided"]
    assert (decided[0]["actor"], decided[0]["on_behalf_of"]) == ("carol", "alice")
    assert (await handler.get_request(late.pending_id)).status.value == "pending"  # type: ignore[union-attr]


async def test_a_desk_taking_slack_clicks_knows_people_by_the_handlers_directory(
    clock: FakeClock,
) -> None:
    """No notifier and no directory given to the desk: Carol's click in Slack is mapped to
    her by the handler's directory, and taken for Alice."""
    clock.now = STARTS
    people = {
        "alice": Person(
            slack_user="U0ALICE", delegations=[Delegation(to="carol", starts=STARTS, ends=ENDS)]
        ),
        "carol": Person(slack_user="U0CAROL"),
    }
    handler = HumanInputHandler(directory=Directory(people))
    assert handler.router is not None
    handler.router.clock = clock
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET, slack=SIGNING_SECRET)
    request = await handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
    approving = click("U0CAROL", request.pending_id, f"roomkit:approve:{request.arguments_digest}")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        clicked = await client.post("/api/slack/interactions", **approving)
    assert clicked.status_code == 200, clicked.text
    decided = [e for e in await handler.history(request.pending_id) if e["type"] == "decided"]
    assert (decided[0]["actor"], decided[0]["surface"]) == ("carol", "slack")
    assert decided[0]["on_behalf_of"] == "alice"


class EmailOnly(Recorder):
    """A surface that reaches only the people the directory gives an email address."""

    name = "email-only"

    def reaches(self, recipient: str | None, person: object) -> bool:
        return isinstance(person, Person) and person.email is not None


def lookalike_directory() -> Directory:
    # "\u0430lice" starts with a Cyrillic a: it reads as alice, and nobody has it.
    away = Delegation(to="\u0430lice", starts=STARTS, ends=ENDS)
    return Directory({"alice": Person(email="alice@example.com", delegations=[away])})


def test_a_delegate_the_directory_does_not_list_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="roomkit.people"):
        lookalike_directory()
    assert "'alice' delegates to '\\u0430lice'" in caplog.text
    assert "not in the directory" in caplog.text


async def test_the_approver_is_told_when_no_surface_reaches_their_delegate(
    clock: FakeClock,
) -> None:
    """A delegation to a name nobody has never leaves the approver unaware of requests."""
    clock.now = STARTS
    handler = HumanInputHandler(directory=lookalike_directory())
    assert handler.router is not None
    handler.router.clock = clock
    surface = EmailOnly()
    async with Notifier(handler, [surface]) as notifier:
        await handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
        await notifier.wait_idle()
    assert [(n.type, n.recipient) for n in surface.told] == [("question_pending", "alice")]
    # A surface that reaches the delegate still tells them in the approver's place.
    _, told = await told_on_escalation(
        handler, lambda: handler.create_approval("pay", {"amount": 6}, approvers=["alice"])
    )
    assert ("question_pending", "\u0430lice") in told
    assert ("question_pending", "alice") not in told

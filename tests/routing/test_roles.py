"""Role approvers: everyone in the role, or one member by rotation, skipping who is away."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from escalating import Recorder, announcement, escalation, told_on_escalation
from routing_clock import FakeClock
from tests.notify.slack_api import SIGNING_SECRET
from tests.servers.slack_clicks import click

from roomkit import RoomKit
from roomkit.desk import create_desk_app, issue_token
from roomkit.notify import Notifier
from roomkit.notify._steps import Planner
from roomkit.people import Delegation, Directory, Person, Role, on_call, role
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SECRET = "routing-tests-secret-0123456789abcdef"


def handler_with(rule: str, people: dict[str, Person] | None = None) -> HumanInputHandler:
    directory = Directory(
        people or {},
        roles={"kyc": Role(members=["dan", "erin", "frank"], rule=rule)},  # type: ignore[arg-type]
    )
    handler = HumanInputHandler(directory=directory)
    assert handler.router is not None
    handler.router.clock = FakeClock(NOW)
    return handler


async def test_everyone_in_the_role_may_decide_and_the_first_answer_wins() -> None:
    handler = handler_with("everyone")
    assert handler.router is not None
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    assert await handler.router.recipients(request) == ("dan", "erin", "frank")
    assert await handler.router.may_decide(request, "erin")
    assert not await handler.router.may_decide(request, "zoe")
    assert await handler.aresolve(request.pending_id, approve(), by="erin")
    assert not await handler.aresolve(request.pending_id, approve(), by="dan")


async def test_rotation_assigns_the_least_recently_assigned_skipping_who_is_away() -> None:
    away = Delegation(to="zoe", starts=NOW - timedelta(days=1), ends=NOW + timedelta(days=1))
    handler = handler_with("rotation", {"erin": Person(delegations=[away])})
    router = handler.router
    assert router is not None
    first = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    second = await handler.create_approval("kyc_check", {"id": 2}, approvers=[role("kyc")])
    third = await handler.create_approval("kyc_check", {"id": 3}, approvers=[role("kyc")])
    assert [await router.recipients(r) for r in (first, second, third)] == [
        ("dan",),
        ("frank",),
        ("dan",),
    ], "erin is away, so the rotation passes her by"
    assert not await router.may_decide(first, "frank")


async def test_requests_made_at_once_go_to_different_members_of_a_rotation(
    tmp_path: Path,
) -> None:
    """A pick held until its assignment is written still passes the member by."""
    directory = Directory(roles={"kyc": Role(members=["dan", "erin", "frank"], rule="rotation")})
    async with SQLiteStore(str(tmp_path / "roomkit.db")) as store:
        handler = HumanInputHandler(store=store, directory=directory)
        router = handler.router
        assert router is not None
        for n in range(3):  # each member assigned once, in the ledger
            await handler.create_approval("kyc_check", {"id": n}, approvers=[role("kyc")])
        made = await asyncio.gather(
            *(
                handler.create_approval("kyc_check", {"id": n}, approvers=[role("kyc")])
                for n in range(3, 6)
            )
        )
        assigned = [(await router.assigned(request))[role("kyc")] for request in made]
    assert sorted(assigned) == ["dan", "erin", "frank"]


async def test_the_ladders_escalation_reassigns_a_rotation() -> None:
    handler = handler_with("rotation")
    router = handler.router
    assert router is not None
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    assert await router.recipients(request) == ("dan",)
    await router.refresh(request, escalating=True)
    assert await router.recipients(request) == ("erin",)
    assert not await router.may_decide(request, "dan")
    routed = [e for e in await handler.history(request.pending_id) if e["surface"] == "routing"]
    assert [(e["approvers"], e["reason"]) for e in routed] == [
        (["dan"], "rotation"),
        (["erin"], "escalation"),
    ]


async def test_the_notifiers_escalation_step_hands_a_rotation_on() -> None:
    handler = handler_with("rotation")
    _, told = await told_on_escalation(
        handler,
        lambda: handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")]),
    )
    assert told == [("question_pending", "dan"), ("question_escalated", "erin")]


async def test_escalating_to_the_manager_of_a_role_reaches_its_members_manager() -> None:
    """A role has no manager of its own: the managers of those standing for it now are."""
    handler = handler_with("everyone", {"erin": Person(manager="mallory")})
    request, told = await told_on_escalation(
        handler,
        lambda: handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")]),
    )
    escalated = await handler.get_request(request.pending_id)
    assert escalated is not None
    assert escalated.approvers == (role("kyc"), "mallory")
    assert ("question_escalated", "mallory") in told


async def test_a_rotation_whose_members_are_all_away_is_assigned_to_their_delegates() -> None:
    """Nobody present: the member assigned least recently is assigned all the same, so their
    delegate decides and the asker reads who is away, where no one at all was told."""
    away = Delegation(to="zoe", starts=NOW - timedelta(days=1), ends=NOW + timedelta(days=9))
    handler = handler_with(
        "rotation", {m: Person(delegations=[away]) for m in ("dan", "erin", "frank")}
    )
    router = handler.router
    assert router is not None
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    assert await router.recipients(request) == ("zoe",)
    assert await router.may_decide(request, "zoe")
    status = await router.status(request)
    assert status is not None
    assert "Zoe is deciding" in status
    assert await handler.aresolve(request.pending_id, approve(), by="zoe")


async def test_an_escalation_with_only_the_assignee_present_keeps_the_assignee() -> None:
    """Dan is assigned and present, erin and frank are away: escalating finds nobody else
    present, and the request stays with dan rather than go to an away member's delegate."""
    away = Delegation(to="zoe", starts=NOW - timedelta(days=1), ends=NOW + timedelta(days=9))
    handler = handler_with("rotation", {m: Person(delegations=[away]) for m in ("erin", "frank")})
    router = handler.router
    assert router is not None
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    assert await router.recipients(request) == ("dan",)
    await router.refresh(request, escalating=True)
    assert await router.recipients(request) == ("dan",)


async def test_processes_whose_roles_disagree_hand_a_request_on_a_bounded_number_of_times() -> None:
    """One process knows kyc as dan and erin, another (restarted with a new file) as frank
    and gina: each hands the request on to a member of its own who never had it, and once
    every member of both has had it, nobody hands it on again."""
    handler = handler_with("rotation")
    router = handler.router
    assert router is not None
    old = Directory(roles={"kyc": Role(members=["dan", "erin"], rule="rotation")})
    new = Directory(roles={"kyc": Role(members=["frank", "gina"], rule="rotation")})
    router.directory = old
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    for _ in range(6):
        for directory in (new, old):
            router.directory = directory
            await router.recipients(request)
    routed = [e for e in await handler.history(request.pending_id) if e["surface"] == "routing"]
    assert len(routed) <= 4, [(e["approvers"], e["reason"]) for e in routed]
    assert len({e["approvers"][0] for e in routed}) == len(routed), "never handed back"


async def rotated_question(handler: HumanInputHandler) -> str:
    """A question of zed's escalated to the rotation, then handed on from dan to erin."""
    router = handler.router
    assert router is not None
    asked = await handler.create(
        "ask_user", {"question": "KYC passed?", "options": ["yes", "no"]}, actor_id="zed"
    )
    await handler.add_approvers(asked.pending_id, [role("kyc")], surface="ladder")
    current = await handler.get_request(asked.pending_id)
    assert current is not None
    assert await router.refresh(current) == {role("kyc"): "dan"}
    assert await router.refresh(current, escalating=True) == {role("kyc"): "erin"}
    return asked.pending_id


async def test_a_question_handed_on_is_answered_by_the_new_member_only() -> None:
    """Dan had the question before the escalation: he reads it, and may not answer it."""
    handler = handler_with("rotation")
    pending_id = await rotated_question(handler)
    path = f"/api/requests/{pending_id}"
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as desk:
        seen = await desk.get(path, headers=bearer("dan"))
        refused = await desk.post(f"{path}/answer", json={"answer": "no"}, headers=bearer("dan"))
        answered = await desk.post(f"{path}/answer", json={"answer": "yes"}, headers=bearer("erin"))
    assert seen.status_code == 200
    assert refused.status_code == 403, refused.text
    assert answered.status_code == 200, answered.text
    assert answered.json()["settled_by"] == "erin"


async def test_a_slack_click_on_a_question_handed_on_is_refused_to_the_member_before() -> None:
    people = {name: Person(slack_user=f"U0{name.upper()}") for name in ("dan", "erin")}
    handler = handler_with("rotation", people)
    pending_id = await rotated_question(handler)
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET, slack=SIGNING_SECRET)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        refused = await client.post(
            "/api/slack/interactions", **click("U0DAN", pending_id, "roomkit:choose:1")
        )
        request = await handler.get_request(pending_id)
        assert request is not None
        assert request.status.value == "pending", refused.text
        assert refused.json()["text"] == (
            "This question is with someone else now, so nothing was changed."
        )
        answered = await client.post(
            "/api/slack/interactions", **click("U0ERIN", pending_id, "roomkit:choose:0")
        )
    assert answered.status_code == 200, answered.text
    settled = await handler.get_request(pending_id)
    assert settled is not None
    assert (settled.settled_by, settled.result) == ("erin", "yes")


def bearer(actor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, actor)}"}


async def test_an_escalation_step_worked_out_again_hands_a_rotation_on_once() -> None:
    """A notifier that dies after handing the rotation on, before it marks its escalation
    step done, leaves the step to another notifier once its lease lapses: the request goes
    on to erin, and not past her to frank."""
    handler = handler_with("rotation")
    router = handler.router
    assert router is not None
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    announce = announcement(handler, request.pending_id)
    step = escalation(handler, request.pending_id)
    await handler.outbox.add([announce, step])
    recorder = Recorder()
    for turn in range(2):
        notifier = Notifier(handler, [recorder])
        planner = Planner(
            handler,
            handler.outbox,
            {"recorder": recorder},
            notifier.directory,
            notifier.statistics(),
            notifier.owner,
            notifier.poll,
        )
        if turn == 0:
            await planner.plan(announce)  # an escalation follows the announcement
        await planner.plan(step)
    assert await router.recipients(request) == ("erin",)
    routed = [e for e in await handler.history(request.pending_id) if e["surface"] == "routing"]
    assert [(e["approvers"], e["reason"]) for e in routed] == [
        (["dan"], "rotation"),
        (["erin"], "escalation"),
    ]
    assert routed[1]["step"] == step.item_id


async def test_a_group_the_directory_lacks_is_refused_as_an_approver() -> None:
    """A role or schedule misspelt would leave the request to nobody: the handler refuses
    it, naming the groups the directory has."""
    handler = handler_with("rotation")
    with pytest.raises(ValueError, match=r"no role 'kyx' \(it has 'kyc'\)"):
        await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyx")])
    with pytest.raises(ValueError, match=r"no on-call schedule 'payments' \(it has none\)"):
        await handler.create_approval("kyc_check", {"id": 1}, approvers=[on_call("payments")])
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    with pytest.raises(ValueError, match=r"no role 'kyx'"):
        await handler.add_approvers(request.pending_id, [role("kyx")])
    current = await handler.get_request(request.pending_id)
    assert current is not None
    assert current.approvers == (role("kyc"),)


async def test_a_handler_without_a_directory_warns_of_a_group_approver(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another process on the store, with the directory, may route it: the request is made,
    and the warning says to give this handler the directory."""
    handler = HumanInputHandler()
    with caplog.at_level("WARNING", logger="roomkit.tools.human_input"):
        request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    assert request.approvers == (role("kyc"),)
    assert "HumanInputHandler(directory=...)" in caplog.text


async def test_a_ladder_escalating_to_a_group_the_directory_lacks_adds_nobody(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = handler_with("rotation")
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    with caplog.at_level("WARNING", logger="roomkit.notify"):
        async with Notifier(handler, [Recorder()]) as notifier:
            await handler.outbox.add([escalation(handler, request.pending_id, to=role("kyx"))])
            await notifier.wait_idle()
    current = await handler.get_request(request.pending_id)
    assert current is not None
    assert current.approvers == (role("kyc"),)
    assert "no role 'kyx'" in caplog.text
    step = [
        i for i in await handler.outbox.items_for(request.pending_id) if "escalate" in i.item_id
    ]
    assert step[0].done


async def test_a_member_named_twice_is_one_member_however_the_names_are_given() -> None:
    """A tuple keeps no repeat a list would not: an "everyone" role lists each person once."""
    given = ("dan", "erin", "dan")
    assert Role(members=given).members == Role(members=list(given)).members == ("dan", "erin")
    handler = HumanInputHandler(directory=Directory(roles={"kyc": Role(members=given)}))
    assert handler.router is not None
    request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
    standings = await handler.router.standings(request)
    assert [s.actor for s in standings] == ["dan", "erin"]

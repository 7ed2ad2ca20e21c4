"""A workflow holds a call for approval: a quorum decided by two people on two surfaces, a
rejection raised with its reason, an edit returned with the new arguments; and the create
activity re-attaches to its request however often it runs."""

from __future__ import annotations

import re

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.workflows import Approve

from roomkit.adapters.temporal import activities
from roomkit.models.pending_input import arguments_digest
from roomkit.people import Directory
from roomkit.tools.approvals import approve

TRIP = {"trip": "Lisbon", "amount": 900}
DIGEST = arguments_digest("book", TRIP)


async def test_a_quorum_decided_by_two_people_on_two_surfaces(world: World) -> None:
    elsewhere = world.handler()  # another process, say the CLI's
    async with running(world.worker(Approve), world.notifier()):
        handle = await world.start(Approve, {"quorum": 2})
        pending_id = await world.created.next()
        bob = await world.answer(pending_id, "bob", {"decision": "approve", "digest": DIGEST})
        carol = await elsewhere.aresolve(
            pending_id, approve(), by="carol", surface="cli", digest=DIGEST
        )
        result = await handle.result()
    assert bob.status_code == 200, bob.text
    assert carol is True
    assert result == {"decision": "approve", "arguments": None, "text": ""}
    history = await world.desk_handler.history(pending_id)
    votes = [(e["actor"], e["surface"]) for e in history if e["type"] == "voted"]
    assert votes == [("bob", "desk"), ("carol", "cli")]
    assert [e["accepted"] for e in history if e["type"] == "delivered"] == [True]


async def test_a_rejection_raises_with_its_reason_and_an_edit_gives_new_arguments(
    world: World,
) -> None:
    async with running(world.worker(Approve), world.notifier()):
        rejected = await world.start(Approve, {})
        first = await world.created.next()
        edited = await world.start(Approve, {})
        second = await world.created.next()
        no = {"decision": "reject", "reason": "too dear", "digest": DIGEST}
        await world.answer(first, "alice", no)
        changed = {"trip": "Porto", "amount": 400}
        yes = {"decision": "edit", "arguments": changed, "digest": DIGEST}
        await world.answer(second, "bob", yes)
        results = [await rejected.result(), await edited.result()]
    assert results[0] == {"error": "HumanInputRejectedError", "message": "too dear"}
    assert results[1] == {"decision": "edit", "arguments": changed, "text": ""}


async def test_the_create_activity_re_attaches_to_its_request(world: World) -> None:
    create, _, _ = activities(world.worker_handler)
    ask = _question()
    environment = ActivityEnvironment()
    made = [await environment.run(create, ask) for _ in range(3)]
    assert {outcome["pending_id"] for outcome in made} == {made[0]["pending_id"]}
    assert [r.pending_id for r in await world.desk_handler.list_pending()] == [
        made[0]["pending_id"]
    ]


async def test_a_re_attached_question_adds_its_approvers_once(world: World) -> None:
    """A create run again (a retry, a reset) records no second escalation."""
    create, _, _ = activities(world.worker_handler)
    ask = _question(approvers=["bob", "carol"])
    environment = ActivityEnvironment()
    made = [await environment.run(create, ask) for _ in range(3)]
    pending_id = made[0]["pending_id"]
    history = await world.desk_handler.history(pending_id)
    assert [entry["type"] for entry in history] == ["created", "escalated"]
    assert history[1]["approvers"] == ["bob", "carol"]
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    assert request.approvers == ("alice", "bob", "carol")


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
async def test_a_ladder_default_that_is_no_decision_is_refused_before_asking(
    world: World,
) -> None:
    async with running(world.worker(Approve)):
        result = await (await world.start(Approve, {"default": "maybe"})).result()
    assert result["error"] == "ValueError"
    assert "the ladder's default is no decision" in result["message"]
    assert await world.desk_handler.list_pending() == []


def _question(**fields: object) -> dict[str, object]:
    """The create activity's input for a question asked of alice."""
    return {
        "kind": "question",
        "tool_name": "choose",
        "arguments": {"question": "Which hotel?"},
        "key": "wf/first-run//1",
        "seq": 1,
        "timeout": 60.0,
        "actor": "alice",
        "room_id": "room",
        "ladder": None,
        **fields,
    }


APPROVERS_REFUSED = [
    # With alice, whom the question lists first, 101.
    ([f"person-{n:07d}" for n in range(100)], "approvers and the actor hold 101 actor ids"),
    (["bob", "role:ops"], "the directory has no role 'ops'"),
    (["bob", "b" * 257], "actor id of 257 characters"),
]


@pytest.mark.parametrize(("approvers", "message"), APPROVERS_REFUSED, ids=["count", "role", "id"])
async def test_a_question_whose_approvers_are_refused_leaves_nothing_stored(
    world: World, approvers: list[str], message: str
) -> None:
    """A workflow from before the workflow checked them, or another caller: the question
    is not made, rather than left open on the desk with no workflow waiting for it."""
    create, _, _ = activities(world.handler(directory=Directory()))
    with pytest.raises(ApplicationError, match=re.escape(message)) as refused:
        await ActivityEnvironment().run(create, _question(approvers=approvers))
    assert refused.value.non_retryable
    assert await world.desk_handler.list_pending() == []


async def test_a_key_naming_another_question_adds_no_approvers_to_it(world: World) -> None:
    """A workflow reset to before its ask, running new code: the question asked before the
    reset keeps who it listed."""
    create, _, _ = activities(world.worker_handler)
    environment = ActivityEnvironment()
    made = await environment.run(create, _question())
    other = _question(arguments={"question": "Which train?"}, approvers=["bob"])
    with pytest.raises(ApplicationError, match="a question about other arguments"):
        await environment.run(create, other)
    history = await world.desk_handler.history(made["pending_id"])
    assert [entry["type"] for entry in history] == ["created"]
    request = await world.desk_handler.get_request(made["pending_id"])
    assert request is not None
    assert request.approvers == ()


async def test_a_quorum_nobody_completed_on_an_edit_defaults_to_the_arguments_asked(
    world: World,
) -> None:
    """One approver of two edits the call, nobody approves the edit, the deadline passes: the
    ladder's default approves the call as asked (as ``Approval(on_expiry="approve")`` runs
    it as shown), not the edit no quorum approved."""
    spec = {"quorum": 2, "default": '{"decision": "approve"}', "timeout": 2, "grace": 0.1}
    async with running(world.worker(Approve), world.notifier()):
        handle = await world.start(Approve, spec)
        pending_id = await world.created.next()
        dearer = {"trip": "Lisbon", "amount": 90_000}
        edit = {"decision": "edit", "arguments": dearer, "digest": DIGEST}
        edited = await world.answer(pending_id, "bob", edit)
        result = await handle.result()
    assert edited.status_code == 200, edited.text
    assert result == {"decision": "approve", "arguments": None, "text": ""}

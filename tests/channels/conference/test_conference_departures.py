"""Participants leaving a conference: the questions they alone could answer are refused."""

from __future__ import annotations

import asyncio

import pytest
from tests.channels.conference.conference_harness import ConferenceHarness, MakeConference
from tests.channels.realtime_harness import ANSWER, ASK, body

from roomkit import Approval, HumanInputToolHandler, PendingInputEvent
from roomkit.models.pending_input import PendingInputStatus

LEFT = "The person asked left the conference before answering."


async def status_of(h: ConferenceHarness, pending_id: str) -> PendingInputStatus:
    assert h.human is not None
    request = await h.human.handler.get_request(pending_id)
    assert request is not None
    return request.status


async def alice_asked(h: ConferenceHarness) -> PendingInputEvent:
    """Alice speaks and the model asks her; the question."""
    await h.speak("alice")
    await h.call("call-1", "Ask", {"question": "Color?"})
    return await h.questions.get()


async def test_a_participant_who_leaves_has_their_question_refused(make: MakeConference) -> None:
    """The model reads at once that the person asked left; the history says so too."""
    h = await make()
    event = await alice_asked(h)
    assert h.human is not None

    await h.backend.simulate_participant_left("r1", "alice")

    request = await h.human.handler.get_request(event.pending_id)
    assert request is not None
    assert (request.status, request.reject_reason) == (PendingInputStatus.REJECTED, LEFT)
    assert await h.provider.wait_for_tool_result("call-1") == body(f"Human input rejected: {LEFT}")
    settled = (await h.human.handler.history(event.pending_id))[-1]
    assert (settled["type"], settled["status"]) == ("settled", "rejected")
    assert (settled["actor"], settled["surface"]) == (None, "conference")
    assert not h.resolve(event)


async def test_someone_else_leaving_leaves_the_question_open(make: MakeConference) -> None:
    h = await make()
    await h.speak("bob")
    await h.speak("alice")
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()

    await h.backend.simulate_participant_left("r1", "bob")

    assert await status_of(h, event.pending_id) is PendingInputStatus.PENDING
    assert h.resolve(event)
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER


@pytest.mark.parametrize(
    "last", ["bob", "", "p" * 100_000, "al\ud800ice"], ids=["bob", "empty", "huge", "surrogate"]
)
async def test_a_question_for_the_room_stays_open_while_someone_remains(
    make: MakeConference, last: str
) -> None:
    """Asked before anyone spoke, anyone in the conference may answer, until the last
    of them leaves: one whose id no request can name (whose speech answers for nobody)
    too."""
    h = await make()
    for who in ("alice", last):
        await h.backend.simulate_participant_joined("r1", who)
    await h.conference.start_realtime("r1")
    await h.call("call-1", "Ask", {"question": "Color?"})
    event = await h.questions.get()
    assert event.actor_id is None

    await h.backend.simulate_participant_left("r1", "alice")
    assert await status_of(h, event.pending_id) is PendingInputStatus.PENDING

    await h.backend.simulate_participant_left("r1", last)
    assert await status_of(h, event.pending_id) is PendingInputStatus.REJECTED
    assert await h.provider.wait_for_tool_result("call-1") == body(f"Human input rejected: {LEFT}")


async def test_an_approval_whose_approver_leaves_is_refused(make: MakeConference) -> None:
    human = HumanInputToolHandler(
        {"Ask"}, tool_definitions=[ASK], approvals={"lookup": Approval(timeout=100)}
    )
    h = await make(human=human)
    await h.speak("bob")
    await h.call("call-1", "lookup", {"key": "k"})
    event = await h.questions.get()
    assert event.approvers == ("bob",)

    await h.backend.simulate_participant_left("r1", "bob")

    request = await human.handler.get_request(event.pending_id)
    assert request is not None
    assert request.status is PendingInputStatus.REJECTED
    assert LEFT in await h.provider.wait_for_tool_result("call-1")
    decided = [e for e in await human.handler.history(event.pending_id) if e["type"] == "decided"]
    assert [(e["decision"], e["reason"], e["actor"]) for e in decided] == [("reject", LEFT, None)]


async def test_leaving_twice_refuses_once(make: MakeConference) -> None:
    h = await make()
    event = await alice_asked(h)
    assert h.human is not None

    await h.backend.simulate_participant_left("r1", "alice")
    await h.backend.simulate_participant_left("r1", "alice")

    assert await status_of(h, event.pending_id) is PendingInputStatus.REJECTED
    await h.provider.wait_for_tool_result("call-1")
    assert (await h.report("Ask")).is_error
    history = await h.human.handler.history(event.pending_id)
    assert [entry["type"] for entry in history] == ["created", "settled"]


async def test_an_answer_given_as_they_leave_is_the_one_the_model_reads(
    make: MakeConference,
) -> None:
    h = await make()
    event = await alice_asked(h)
    assert h.human is not None

    answered, _ = await asyncio.gather(
        h.human.handler.aresolve(event.pending_id, ANSWER, by="alice"),
        h.backend.simulate_participant_left("r1", "alice"),
    )

    assert answered
    assert await h.provider.wait_for_tool_result("call-1") == ANSWER
    assert await status_of(h, event.pending_id) is PendingInputStatus.RESOLVED

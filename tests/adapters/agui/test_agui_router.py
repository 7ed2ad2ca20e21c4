"""The AG-UI endpoint: held calls end a run with an interrupt, ``resume[]`` answers them."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from ag_ui.core import EventType
from agui_front import DONE, SECRET, Front, ask, bearer, interrupts, parse, send, texts
from fastapi import FastAPI

from roomkit.adapters.agui import agui_router
from roomkit.desk.stores import close_stores, open_stores
from roomkit.providers.ai.base import AIResponse


async def test_a_held_question_ends_the_run_with_an_interrupt(front: Front) -> None:
    events = await front.run("Paint it")
    types = [e.type for e in events]
    assert types[1:4] == [
        EventType.TOOL_CALL_START,
        EventType.TOOL_CALL_ARGS,
        EventType.TOOL_CALL_END,
    ]
    assert events[1].tool_call_id == "tc-ask"
    assert events[1].tool_call_name == "AskUserQuestion"
    [interrupt] = interrupts(events)
    [request] = await front.handler.list_pending(room_id="t1")
    assert interrupt.id == request.pending_id
    assert interrupt.reason == "input_required"
    assert interrupt.tool_call_id == "tc-ask"
    assert interrupt.message == "Which colour?"
    assert interrupt.response_schema["required"] == ["answer"]
    assert interrupt.expires_at is not None
    assert interrupt.expires_at.endswith("Z")
    assert interrupt.metadata == {"roomkit": {"kind": "question", "approvers": []}}


async def test_a_resolved_resume_answers_as_the_caller_and_streams_the_reply(
    front: Front,
) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}}]
    events = await front.run(resume=resume)
    assert texts(events) == ["Blue it is."]
    assert events[-1].outcome is None or events[-1].outcome.type == "success"
    request = await front.handler.get_request(interrupt.id)
    assert request is not None
    assert (request.result, request.settled_by) == ("blue", "alice")
    # The same resume again is a replay: accepted, nothing run again.
    again = await front.run(resume=resume)
    assert again[-1].type == EventType.RUN_FINISHED
    assert len(front.provider.calls) == 2


async def test_a_new_message_is_no_answer_to_the_open_interrupt() -> None:
    """A user message sent while an interrupt is open starts a turn of its own, run once the
    interrupt is answered through ``resume[]``."""
    front = Front([ask(), DONE, AIResponse(content="It costs 5.")])
    try:
        [interrupt] = interrupts(await front.run("Paint it"))
        [again] = interrupts(await front.run("What does it cost?"))
        assert again.id == interrupt.id
        [still] = await front.handler.list_pending(room_id="t1")
        assert still.pending_id == interrupt.id
        answer = {"answer": "blue"}
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": answer}]
        events = await front.run(resume=resume)
        assert texts(events) == ["Blue it is.", "It costs 5."]
        settled = await front.handler.get_request(interrupt.id)
        assert settled is not None
        assert settled.result == "blue"
    finally:
        await front.close()


async def test_a_cancelled_resume_withdraws_the_question(front: Front) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    events = await front.run(resume=[{"interruptId": interrupt.id, "status": "cancelled"}])
    assert events[-1].type == EventType.RUN_FINISHED
    request = await front.handler.get_request(interrupt.id)
    assert request is not None
    assert request.withdrawn


@pytest.mark.parametrize(
    ("entry", "code"),
    [
        ({"interruptId": "nope", "status": "resolved", "payload": {"answer": "x"}}, "unknown"),
        ({"status": "resolved", "payload": {"colour": "blue"}}, "invalid_payload"),
    ],
)
async def test_a_resume_it_cannot_take_ends_in_run_error(
    front: Front, entry: dict[str, object], code: str
) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    entry = {"interruptId": interrupt.id, **entry}
    events = await front.run(resume=[entry])
    assert events[-1].type == EventType.RUN_ERROR
    assert events[-1].code.startswith(code)
    request = await front.handler.get_request(interrupt.id)
    assert request is not None
    assert request.result is None


async def test_another_persons_interrupt_is_unknown(front: Front) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    await front.kit.add_participant("t1", "mallory")
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "red"}}]
    events = await front.run(resume=resume, actor="mallory")
    assert (events[-1].type, events[-1].code) == (EventType.RUN_ERROR, "unknown_interrupt")
    assert (await front.handler.list_pending(room_id="t1"))[0].pending_id == interrupt.id


async def test_a_thread_of_someone_else_is_not_served(front: Front) -> None:
    await front.run("Paint it")
    async with front.client() as client:
        body = {"threadId": "t1", "runId": "x", "messages": []}
        response = await client.post("/agui", json=body, headers=bearer("mallory"))
        anonymous = await client.post("/agui", json=body)
    assert response.status_code == 404
    assert anonymous.status_code == 401


async def test_an_approval_is_a_tool_call_interrupt_with_its_digest() -> None:
    front = Front([send(), AIResponse(content="Sent.")])
    try:
        [interrupt] = interrupts(await front.run("Mail bob"))
        assert interrupt.reason == "tool_call"
        assert interrupt.tool_call_id == "tc-send"
        assert set(interrupt.response_schema["properties"]) == {"approved", "editedArgs", "reason"}
        assert interrupt.metadata["roomkit"]["kind"] == "approval"
        assert len(interrupt.metadata["roomkit"]["digest"]) == 64
        edited = {"approved": True, "editedArgs": {"to": "carol@example.com"}}
        resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": edited}]
        events = await front.run(resume=resume)
        assert texts(events) == ["Sent."]
        assert front.outbox.sent == [{"to": "carol@example.com"}]
    finally:
        await front.close()


async def test_a_partial_resume_leaves_the_uncovered_approval_unrun() -> None:
    both = AIResponse(tool_calls=[*ask().tool_calls, *send().tool_calls])
    front = Front([both, AIResponse(content="Done.")])
    try:
        found = interrupts(await front.run("Paint and mail"))
        by_reason = {interrupt.reason: interrupt for interrupt in found}
        assert set(by_reason) == {"input_required", "tool_call"}
        question = by_reason["input_required"]
        resume = [{"interruptId": question.id, "status": "resolved", "payload": {"answer": "x"}}]
        events = await front.run(resume=resume)
        assert (events[-1].type, events[-1].code) == (EventType.RUN_ERROR, "uncovered_approval")
        # Nothing was settled, the question included, and the held call never ran.
        assert len(await front.handler.list_pending(room_id="t1")) == 2
        assert front.outbox.sent == []
    finally:
        await front.close()


async def test_a_resume_sent_again_after_its_turn_opened_another_approval_is_a_replay() -> None:
    """The resume's answer was lost and the client sends the same request again: it settles
    nothing anew, and the approval its turn opened since is shown, not held against it."""
    bob, carol = send("bob@example.com", id="tc-1"), send("carol@example.com", id="tc-2")
    front = Front([bob, carol, AIResponse(content="Sent both.")])
    try:
        [first] = interrupts(await front.run("Mail bob and carol"))
        resume = [{"interruptId": first.id, "status": "resolved", "payload": {"approved": True}}]
        body = {"threadId": "t1", "runId": "r-resume", "messages": front.messages, "resume": resume}
        async with front.client() as client:
            answered = await client.post("/agui", json=body, headers=bearer("alice"))
            [second] = interrupts(parse(answered.text))
            again = await client.post("/agui", json=body, headers=bearer("alice"))
        events = parse(again.text)
        assert [i.id for i in interrupts(events)] == [second.id]
        assert front.outbox.sent == [{"to": "bob@example.com"}]
        [still] = await front.handler.list_pending(room_id="t1")
        assert still.pending_id == second.id
    finally:
        await front.close()


async def test_an_answer_given_on_the_desk_first_shows_as_settled(front: Front) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    async with front.client() as client:
        answered = await client.post(
            f"/api/requests/{interrupt.id}/answer",
            json={"answer": "green"},
            headers=bearer("alice"),
        )
    assert answered.status_code == 200, answered.text
    # The same answer from the front end is a replay; the run shows the outcome and the reply.
    same = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "green"}}]
    events = await front.run(resume=same)
    [outcome] = [e for e in events if e.type == EventType.TOOL_CALL_RESULT]
    assert outcome.tool_call_id == "tc-ask"
    assert "green" in outcome.content
    assert texts(events) == ["Blue it is."]
    # Another answer is refused: the desk's stands.
    other = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "red"}}]
    refused = await front.run(resume=other)
    assert (refused[-1].type, refused[-1].code) == (EventType.RUN_ERROR, "already_settled")


async def test_an_interrupt_is_resumed_after_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    questions, rooms = open_stores(url)
    first = Front([ask()], questions=questions, rooms=rooms)
    [interrupt] = interrupts(await first.run("Paint it"))
    # The process goes: its turn is cut where it waits, as a kill would cut it.
    [turn] = [t for t in asyncio.all_tasks() if t.get_name() == "agui-turns-t1"]
    turn.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    await first.close()
    await close_stores(questions, rooms)

    questions, rooms = open_stores(url)
    second = Front([DONE], questions=questions, rooms=rooms)
    second.messages = first.messages
    redrive = asyncio.create_task(second.kit.resume_pending())
    try:
        resume = [
            {"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}}
        ]
        events = await second.run(resume=resume)
        assert texts(events) == ["Blue it is."]
        await redrive
    finally:
        await second.close()
        await close_stores(questions, rooms)


async def test_a_resume_taken_by_another_process_streams_the_turns_reply(tmp_path: Path) -> None:
    """Two servers on one store: the thread's turn waits on the first, the resume comes to
    the second; the turn goes on in the first, and the second's run streams its reply."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    (questions, rooms), (other_questions, other_rooms) = open_stores(url), open_stores(url)
    asking = Front([ask(), DONE], questions=questions, rooms=rooms)
    answering = Front([], questions=other_questions, rooms=other_rooms)
    try:
        [interrupt] = interrupts(await asking.run("Paint it"))
        answering.messages = asking.messages
        resume = [
            {"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}}
        ]
        events = await answering.run(resume=resume)
    finally:
        await asking.close()
        await answering.close()
        await close_stores(questions, rooms, other_questions, other_rooms)
    assert texts(events) == ["Blue it is."]
    assert events[-1].type == EventType.RUN_FINISHED


async def test_the_endpoint_guards_its_door_as_the_desk_does() -> None:
    """A foreign ``Host`` gets 400, a body over the cap 413, a person past the rate 429."""
    front = Front([ask()])
    front.app = FastAPI()
    front.app.include_router(
        agui_router(
            front.kit,
            agent="ai",
            handler=front.handler,
            secret=SECRET,
            rate=1.0,
            burst=2,
            max_body=4096,
        )
    )
    alice = bearer("alice")
    async with front.client() as client:
        foreign = await client.get("/agui/capabilities", headers={**alice, "Host": "evil.example"})
        big = await client.post("/agui", headers=alice, content=b"{" + b" " * 8192 + b"}")
        codes = [
            (await client.get("/agui/capabilities", headers=alice)).status_code for _ in range(3)
        ]
    assert foreign.status_code == 400
    assert big.status_code == 413
    assert codes == [200, 429, 429] or codes == [200, 200, 429]

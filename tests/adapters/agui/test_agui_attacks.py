"""The AG-UI endpoint against what a front end may send: hostile resumes, two clients at once,
long threads, requests no turn holds; and what it advertises."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import AgentCapabilities, EventType
from agui_front import Front, ask, bearer, interrupts, parse, send, texts

from roomkit import Approval
from roomkit.desk.stores import close_stores, open_stores
from roomkit.models.room import RoomEvent, TextContent
from roomkit.providers.ai.base import AIResponse


async def post(front: Front, body: dict[str, Any], actor: str = "alice") -> Any:
    async with front.client() as client:
        return await client.post("/agui", json=body, headers=bearer(actor))


async def test_the_capabilities_advertise_human_in_the_loop(front: Front) -> None:
    async with front.client() as client:
        response = await client.get("/agui/capabilities", headers=bearer("alice"))
    assert response.status_code == 200
    advertised = AgentCapabilities.model_validate(response.json())
    hitl = advertised.human_in_the_loop
    assert hitl is not None
    assert (hitl.supported, hitl.interrupts, hitl.approvals, hitl.approve_with_edits) == (
        True,
        True,
        True,
        True,
    )
    assert response.json()["humanInTheLoop"]["supported"] is True


BAD_ENTRIES: list[tuple[str, dict[str, Any], str]] = [
    ("payload is text", {"status": "resolved", "payload": "blue"}, "invalid_payload"),
    ("payload is a list", {"status": "resolved", "payload": ["blue"]}, "invalid_payload"),
    ("no payload", {"status": "resolved"}, "invalid_payload"),
    ("answer is a number", {"status": "resolved", "payload": {"answer": 3}}, "invalid_payload"),
    ("answer is empty", {"status": "resolved", "payload": {"answer": ""}}, "invalid_payload"),
    ("an unknown field", {"status": "resolved", "payload": {"answer": "b", "x": 1}}, "invalid"),
    ("a huge unknown id", {"interruptId": "i" * 100_000, "status": "resolved"}, "unknown"),
    ("an unknown id", {"interruptId": "0" * 32, "status": "cancelled"}, "unknown_interrupt"),
    ("an id of line breaks", {"interruptId": "i\n" * 50_000, "status": "cancelled"}, "unknown"),
]


@pytest.mark.parametrize(
    ("entry", "code"), [(e, c) for _, e, c in BAD_ENTRIES], ids=[n for n, *_ in BAD_ENTRIES]
)
async def test_a_hostile_resume_entry_ends_in_run_error_and_settles_nothing(
    front: Front, entry: dict[str, Any], code: str
) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    events = await front.run(resume=[{"interruptId": interrupt.id, **entry}])
    assert events[-1].type == EventType.RUN_ERROR
    assert events[-1].code.startswith(code)
    assert len(events[-1].message) < 2_000
    assert "\n" not in events[-1].message
    [still] = await front.handler.list_pending(room_id="t1")
    assert still.pending_id == interrupt.id


@pytest.mark.parametrize(
    "resume",
    [
        [{"interruptId": 5, "status": "resolved", "payload": {"answer": "b"}}],
        [{"interruptId": "x", "status": "done"}],
        [{"interruptId": "x", "status": "resolved", "metadata": 5}],
        {"interruptId": "x"},
        "resolved",
    ],
)
async def test_a_resume_that_is_no_resume_is_refused_with_422(front: Front, resume: Any) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    body = {"threadId": "t1", "runId": "r", "messages": front.messages, "resume": resume}
    response = await post(front, body)
    assert response.status_code == 422
    assert "RunAgentInput" in response.json()["detail"]
    assert [r.pending_id for r in await front.handler.list_pending()] == [interrupt.id]


async def test_two_clients_resuming_at_once_settle_once_and_both_runs_end(
    front: Front,
) -> None:
    """Two tabs answer the same interrupt differently at the same moment: one answer is
    recorded, the turn resumes once, and each run ends with one terminal event."""
    [interrupt] = interrupts(await front.run("Paint it"))

    def body(answer: str) -> dict[str, Any]:
        entry = {"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": answer}}
        return {"threadId": "t1", "runId": answer, "messages": front.messages, "resume": [entry]}

    blue, red = await asyncio.gather(post(front, body("blue")), post(front, body("red")))
    runs = [parse(blue.text), parse(red.text)]
    request = await front.handler.get_request(interrupt.id)
    assert request is not None
    assert request.result in ("blue", "red")
    loser = runs[1] if request.result == "blue" else runs[0]
    assert (loser[-1].type, loser[-1].code) == (EventType.RUN_ERROR, "already_settled")
    assert request.result in loser[-1].message
    assert len(front.provider.calls) == 2


async def test_another_persons_resume_of_a_settled_interrupt_is_still_unknown(
    front: Front,
) -> None:
    """A replay is taken only from those who may answer: another person naming a settled
    interrupt learns nothing of its answer."""
    [interrupt] = interrupts(await front.run("Paint it"))
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}}]
    await front.run(resume=resume)
    await front.kit.add_participant("t1", "mallory")
    events = await front.run(resume=resume, actor="mallory")
    assert (events[-1].type, events[-1].code) == (EventType.RUN_ERROR, "unknown_interrupt")
    assert "blue" not in events[-1].message


async def test_messages_the_room_holds_are_not_run_again_on_a_long_thread() -> None:
    """The front end resends the whole conversation; once the room's latest events no
    longer hold its first messages, those still do not run again."""
    front = Front([AIResponse(content=f"Reply {n}.") for n in range(5)])
    try:
        await front.run("first")
        for n in range(250):  # others speak in the room meanwhile
            note = RoomEvent("t1", "desk", "bob", TextContent(f"note {n}"))
            await front.kit.store.add_event(note)
        await front.run("second")
        await front.run("third")
        said = [call.messages[-1].content for call in front.provider.calls]
        assert len(said) == 3
    finally:
        await front.close()


async def test_a_request_no_turn_holds_does_not_hold_the_run(front: Front) -> None:
    """A detached request of the thread (its creator owns it, no wait gives it a deadline)
    is no interrupt: the run ends once the thread rests, and does not wait for it."""
    # The thread's room exists first: a room id holding requests but no record is no one's.
    await front.kit.create_room("t1")
    await front.kit.add_participant("t1", "alice")
    await front.kit.attach_channel("t1", "ai")
    aside = await front.handler.create_detached(
        "AskUserQuestion", {"question": "Lunch?"}, room_id="t1"
    )
    [interrupt] = interrupts(await front.run("Paint it"))
    assert interrupt.id != aside.pending_id
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}}]
    events = await front.run(resume=resume)
    assert texts(events) == ["Blue it is."]
    assert events[-1].type == EventType.RUN_FINISHED
    assert events[-1].outcome is None or events[-1].outcome.type == "success"
    await front.handler.arelease(aside.pending_id)


async def test_an_answer_on_the_desk_shows_as_settled_on_a_run_that_does_not_resume(
    front: Front,
) -> None:
    """The client keeps the held call it was shown; the person answers on the desk; the
    next run, with no resume, starts with the call's outcome, then the turn's reply, and
    a client that holds that outcome is not told it again."""
    events = await front.run("Paint it")
    [interrupt] = interrupts(events)
    start = next(e for e in events if e.type == EventType.TOOL_CALL_START)
    call = {
        "id": start.tool_call_id,
        "type": "function",
        "function": {"name": start.tool_call_name, "arguments": "{}"},
    }
    front.messages.append({"id": "a-held", "role": "assistant", "toolCalls": [call]})
    async with front.client() as client:
        answered = await client.post(
            f"/api/requests/{interrupt.id}/answer",
            json={"answer": "green"},
            headers=bearer("alice"),
        )
    assert answered.status_code == 200, answered.text
    [turn] = [t for t in asyncio.all_tasks() if t.get_name() == "agui-turns-t1"]
    await turn
    events = await front.run()
    [outcome] = [e for e in events if e.type == EventType.TOOL_CALL_RESULT]
    assert (outcome.tool_call_id, outcome.content) == ("tc-ask", "answered by alice: green")
    assert texts(events) == ["Blue it is."]
    assert [e.type for e in events].index(EventType.TOOL_CALL_RESULT) == 1
    front.messages.append(
        {"id": outcome.message_id, "role": "tool", "toolCallId": "tc-ask", "content": "green"}
    )
    again = await front.run()
    assert [e for e in again if e.type == EventType.TOOL_CALL_RESULT] == []


async def test_an_interrupt_of_another_thread_is_unknown_here(front: Front) -> None:
    [interrupt] = interrupts(await front.run("Paint it"))
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "red"}}]
    events = await front.run(resume=resume, thread="t2")
    assert (events[-1].type, events[-1].code) == (EventType.RUN_ERROR, "unknown_interrupt")
    assert [r.pending_id for r in await front.handler.list_pending(room_id="t1")] == [interrupt.id]


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "sqlite"])
async def test_two_runs_sending_the_same_new_message_run_it_once(
    durable: bool, tmp_path: Path
) -> None:
    """A front end that sends a thread's first run twice at once (a retry, two tabs): the
    thread is made once, the message runs once, and both runs stream its reply."""
    stores = open_stores(f"sqlite:///{tmp_path / 'kit.db'}") if durable else (None, None)
    questions, rooms = stores
    script = [AIResponse(content="Hello."), AIResponse(content="Hello again.")]
    front = Front(script, questions=questions, rooms=rooms)
    body = {
        "threadId": "t1",
        "runId": "r",
        "messages": [{"id": "m0", "role": "user", "content": "hi"}],
    }
    try:
        first, second = await asyncio.gather(post(front, body), post(front, body))
        assert len(front.provider.calls) == 1
        assert texts(parse(first.text)) == texts(parse(second.text)) == ["Hello."]
    finally:
        await front.close()
        if durable:
            await close_stores(questions, rooms)


async def test_an_approval_for_someone_else_does_not_block_the_callers_resume() -> None:
    """Bob decides the held call; Alice's resume of her own question is taken without it,
    the call waits for Bob, and runs once he approves on the desk."""
    both = AIResponse(tool_calls=[*ask().tool_calls, *send().tool_calls])
    front = Front([both, AIResponse(content="Done.")], approval=Approval(approvers="bob"))
    try:
        found = {i.reason: i for i in interrupts(await front.run("Paint and mail"))}
        question, approval = found["input_required"], found["tool_call"]
        assert approval.metadata["roomkit"]["approvers"] == ["bob"]
        decided = {"interruptId": approval.id, "status": "resolved", "payload": {"approved": True}}
        refused = await front.run(resume=[decided])
        assert (refused[-1].type, refused[-1].code) == (EventType.RUN_ERROR, "unknown_interrupt")
        answer = {"interruptId": question.id, "status": "resolved", "payload": {"answer": "x"}}
        [still] = interrupts(await front.run(resume=[answer]))
        assert still.id == approval.id
        assert front.outbox.sent == []
        async with front.client() as client:
            approved = await client.post(
                f"/api/requests/{approval.id}/answer",
                json={"decision": "approve"},
                headers=bearer("bob"),
            )
        assert approved.status_code == 200, approved.text
        assert texts(await front.run()) == ["Done."]
        assert front.outbox.sent == [{"to": "bob@example.com"}]
    finally:
        await front.close()


@pytest.mark.parametrize(
    "thread_id", ["", "t" * 257, "t\x00", " t"], ids=["empty", "long", "nul", "space"]
)
async def test_a_thread_id_that_is_no_room_id_is_refused_with_422(
    front: Front, thread_id: str
) -> None:
    body = {
        "threadId": thread_id,
        "runId": "r",
        "messages": [{"id": "m", "role": "user", "content": "hi"}],
    }
    response = await post(front, body)
    assert response.status_code == 422
    assert response.json()["detail"].startswith("threadId ")
    assert len(response.text) < 500
    assert front.provider.calls == []


async def test_an_edit_that_breaks_the_tools_schema_settles_nothing_of_the_resume() -> None:
    """The question's answer is fine, the approval's edit is not: the run ends in
    ``invalid_payload`` and neither is settled."""
    both = AIResponse(tool_calls=[*ask().tool_calls, *send().tool_calls])
    front = Front([both, AIResponse(content="Done.")])
    try:
        found = {i.reason: i for i in interrupts(await front.run("Paint and mail"))}
        question, approval = found["input_required"], found["tool_call"]
        edit = {"approved": True, "editedArgs": {"to": 5}}
        resume = [
            {"interruptId": question.id, "status": "resolved", "payload": {"answer": "x"}},
            {"interruptId": approval.id, "status": "resolved", "payload": edit},
        ]
        events = await front.run(resume=resume)
        assert (events[-1].type, events[-1].code) == (EventType.RUN_ERROR, "invalid_payload")
        assert "editedArgs" in events[-1].message
        assert len(await front.handler.list_pending(room_id="t1")) == 2
        assert front.outbox.sent == []
    finally:
        await front.close()


async def test_a_shared_threads_question_for_another_is_not_the_callers_interrupt(
    front: Front,
) -> None:
    """Bob's turn in a thread alice shares asks bob: alice's runs neither show it nor end
    on it (an interrupt she could never answer)."""
    front.provider.ai_responses = [AIResponse(content="Hello."), ask("Bob: your salary?")]
    await front.run("hi")
    await front.kit.add_participant("t1", "bob")
    bobs = await front.run("hi", actor="bob")
    [asked] = interrupts(bobs)
    events = await front.run(actor="alice")
    assert events[-1].type == EventType.RUN_FINISHED
    assert events[-1].outcome.type == "success"
    assert "salary" not in str([event.model_dump() for event in events])
    request = await front.handler.get_request(asked.id)
    assert request is not None
    assert request.actor_id == "bob"


async def test_a_thread_id_naming_a_room_of_questions_with_no_record_is_refused(
    front: Front,
) -> None:
    """An MCP server's questions asked of no one sit in its room ``mcp``, which has no
    record: a caller naming it first would become its one participant and see them."""
    asked = await front.handler.create(
        "ConfirmAction", {"action": "Wire $50,000 to ACME"}, room_id="mcp", channel_id="mcp"
    )
    body = {"threadId": "mcp", "runId": "r1", "messages": []}
    refused = await post(front, body, actor="mallory")
    assert refused.status_code == 404
    assert await front.kit.store.get_room("mcp") is None
    async with front.client() as client:
        listed = await client.get("/api/requests", headers=bearer("mallory"))
    assert asked.pending_id not in listed.text


async def test_a_resume_with_text_no_store_takes_settles_none_of_its_entries(
    front: Front,
) -> None:
    """The resume is all or nothing: an answer holding a lone surrogate is refused with the
    others, before any of them is settled."""
    both = ask("Which colour?", id="tc-a")
    both.tool_calls.extend(ask("Which size?", id="tc-b").tool_calls)
    front.provider.ai_responses = [both]
    first, second = interrupts(await front.run("Paint it"))
    resume = [
        {"interruptId": first.id, "status": "resolved", "payload": {"answer": "blue"}},
        {"interruptId": second.id, "status": "resolved", "payload": {"answer": "L\ud800"}},
    ]
    body = {"threadId": "t1", "runId": "r-resume", "messages": front.messages, "resume": resume}
    response = await front.post(body)
    events = parse(response.text)
    assert events[-1].type == EventType.RUN_ERROR
    assert events[-1].code.startswith("invalid_payload")
    assert {r.pending_id for r in await front.handler.list_pending(room_id="t1")} == {
        first.id,
        second.id,
    }


async def test_a_message_with_text_no_store_takes_is_refused_naming_it(front: Front) -> None:
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "m0", "role": "user", "content": "Paint it caf\ud800"}],
    }
    response = await front.post(body)
    assert response.status_code == 422
    assert "lone surrogate" in response.json()["detail"]
    assert front.provider.calls == []


@pytest.mark.parametrize(
    "entry",
    [
        {"interruptId": "\ud800", "status": "resolved", "payload": {"answer": "blue"}},
        {"interruptId": "x", "status": "cancelled", "metadata": {"sig": "\udc00"}},
    ],
    ids=["in its id", "in its metadata"],
)
async def test_a_resume_entry_with_text_no_stream_encodes_is_refused_with_422(
    front: Front, entry: dict[str, Any]
) -> None:
    """A lone surrogate in a resume entry's id or metadata is refused before the run starts,
    naming where it is: the stream could not quote it back."""
    [interrupt] = interrupts(await front.run("Paint it"))
    body = {"threadId": "t1", "runId": "r", "messages": front.messages, "resume": [entry]}
    response = await front.post(body)
    assert response.status_code == 422
    assert "lone surrogate" in response.json()["detail"]
    assert "resume[0]" in response.json()["detail"]
    assert [r.pending_id for r in await front.handler.list_pending()] == [interrupt.id]


NOT_OBJECTS = {
    "a list holding a lone surrogate": b'["\\ud800"]',
    "a string holding a lone surrogate": b'"\\udc00"',
    "a list": b"[1, 2]",
    "a number": b"5",
    "null": b"null",
}


@pytest.mark.parametrize("body", list(NOT_OBJECTS.values()), ids=list(NOT_OBJECTS))
async def test_a_body_that_is_no_object_is_refused_with_422(front: Front, body: bytes) -> None:
    """A body that is JSON but no object is refused in a few words, without quoting it back
    (a lone surrogate in it included)."""
    response = await front.post(body)
    assert response.status_code == 422
    assert response.json()["detail"] == (
        "Not a RunAgentInput: the body must be a RunAgentInput object"
    )
    assert front.provider.calls == []


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "sqlite"])
async def test_a_client_numbering_its_messages_has_each_one_run(
    durable: bool, tmp_path: Path
) -> None:
    """A front end numbering the messages it sends ``"1"``, ``"2"``: the second is run, and
    streamed alone, though the agent's first reply may have come under the id ``"2"``."""
    stores = open_stores(f"sqlite:///{tmp_path / 'kit.db'}") if durable else (None, None)
    questions, rooms = stores
    front = Front(
        [AIResponse(content="One."), AIResponse(content="Two.")], questions=questions, rooms=rooms
    )
    messages: list[dict[str, Any]] = []
    replies = []
    try:
        for number, text in enumerate(["hi", "again"], start=1):
            messages.append({"id": str(number), "role": "user", "content": text})
            body = {"threadId": "t1", "runId": f"r{number}", "messages": messages}
            events = parse((await post(front, body)).text)
            replies.append(texts(events))
            messages += [
                {"id": e.message_id, "role": "assistant", "content": e.delta}
                for e in events
                if e.type == EventType.TEXT_MESSAGE_CONTENT
            ]
        assert replies == [["One."], ["Two."]]
        assert len(front.provider.calls) == 2
    finally:
        await front.close()
        if durable:
            await close_stores(questions, rooms)


async def test_a_message_sent_twice_in_one_run_runs_once() -> None:
    """The conversation holds the same message twice (a front end that appended it again):
    one turn, one reply, one message recorded."""
    front = Front([AIResponse(content="Once."), AIResponse(content="Twice.")])
    message = {"id": "m0", "role": "user", "content": "Paint it"}
    body = {"threadId": "t1", "runId": "r1", "messages": [message, message]}
    try:
        events = parse((await post(front, body)).text)
        assert texts(events) == ["Once."]
        assert len(front.provider.calls) == 1
        recorded = await front.kit.store.list_events("t1", offset=0, limit=50)
        assert [e.content.body for e in recorded] == ["Paint it", "Once."]
    finally:
        await front.close()

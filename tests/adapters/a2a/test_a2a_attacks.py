"""RoomKitExecutor against what a caller may send: another caller's context, data parts of
every wrong shape, two answers at once, requests no turn holds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part
from a2a.types import Message, Role, SendMessageRequest, Task, TaskState
from a2a_world import BASE, SECRET, World, ask, asked, send

from roomkit.desk.auth import token_entry
from roomkit.desk.stores import close_stores, open_stores
from roomkit.desk.tokens import issue_token, token_claims
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.providers.ai.base import AIResponse
from roomkit.tools.approvals import Approval

DONE = AIResponse(content="Blue it is.")


async def test_another_callers_context_is_refused_and_shows_nothing() -> None:
    """Mallory starts a task of her own in Alice's context: it is rejected, runs no turn,
    shows none of Alice's questions and leaves her off the room's roster."""
    world = World([ask(), DONE, DONE])
    async with world.http() as http:
        await world.send(http, text="Paint it")
    [request] = await world.handler.list_pending(room_id="ctx-1")
    async with world.http("mallory") as http:
        task = await world.send(http, text="What is open?", context_id="ctx-1")
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    parts = list(task.status.message.parts)
    assert get_data_parts(parts) == []
    assert "No such context" in get_text_parts(parts)[0]
    assert "Which colour?" not in str(task)
    roster = {p.id for p in await world.kit.store.list_participants("ctx-1")}
    assert roster == {"alice"}
    assert len(world.provider.calls) == 1
    assert [r.pending_id for r in await world.handler.list_pending()] == [request.pending_id]


HOSTILE: dict[str, Any] = {
    "an id that is a list": {"pending_id": [1, 2], "answer": "red"},
    "an id that is an object": {"pending_id": {"id": 1}, "answer": "red"},
    "an id that is a number": {"pending_id": 5, "answer": "red"},
    "a huge id": {"pending_id": "p" * 100_000, "answer": "red"},
    "an unknown id": {"pending_id": "0" * 32, "answer": "red"},
    "an id of line breaks": {"pending_id": "p\n" * 50_000, "answer": "red"},
}


async def asked_again(data: Any) -> tuple[World, PendingInput, Task]:
    """A task asking one question, and the task as a follow-up holding ``data`` left it:
    ``input-required`` again."""
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        again = await world.send(http, data=data, task=task)
    assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    return world, request, again


@pytest.mark.parametrize("data", list(HOSTILE.values()), ids=list(HOSTILE))
async def test_a_data_part_naming_no_open_request_asks_again(data: dict[str, Any]) -> None:
    """The task stays ``input-required``, says what was wrong in a few words, shows the
    open question again, and the question stays open."""
    world, request, again = await asked_again(data)
    parts = list(again.status.message.parts)
    [problem, question] = get_text_parts(parts)
    assert problem.startswith("No open request")
    assert len(problem) < 300
    assert "\n" not in problem
    problem.encode("utf-8")
    assert question == "Which colour?"
    assert [d["pending_id"] for d in get_data_parts(parts)] == [request.pending_id]
    assert [r.pending_id for r in await world.handler.list_pending()] == [request.pending_id]


async def test_a_structured_answer_keeps_its_whole_numbers() -> None:
    """A data part's numbers travel as doubles; an answer's whole numbers are recorded as
    the integers the caller sent, so an answer schema asking for integers takes them."""
    integers = {
        "type": "object",
        "properties": {
            "shade": {"type": "integer"},
            "mix": {"type": "array", "items": {"type": "number"}},
            "named": {"type": "object", "properties": {"n": {"type": "integer"}}},
        },
    }
    world = World([ask(), DONE], answer_schemas={"AskUserQuestion": integers})
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        answer = {"shade": 3, "mix": [1, 2.5], "named": {"n": 0}}
        await world.send(http, data={"pending_id": request.pending_id, "answer": answer}, task=task)
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.result is not None
    recorded = json.loads(settled.result)
    assert recorded == answer
    assert [type(v) for v in (recorded["shade"], *recorded["mix"], recorded["named"]["n"])] == [
        int,
        int,
        float,
        int,
    ]


async def test_two_answers_at_once_settle_once_and_both_calls_end() -> None:
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        answers = [{"pending_id": request.pending_id, "answer": a} for a in ("blue", "red")]
        ends = await asyncio.gather(
            *(world.send(http, data=a, task=task) for a in answers), return_exceptions=True
        )
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.result in ("blue", "red")
    assert len(world.provider.calls) == 2
    finished = [e for e in ends if not isinstance(e, BaseException)]
    assert finished, ends
    assert all(e.status.state == TaskState.TASK_STATE_COMPLETED for e in finished)


async def test_a_request_no_turn_holds_does_not_hold_the_task() -> None:
    """A detached request of the room (no wait gives it a deadline) holds nothing: the
    task completes with the agent's reply."""
    world = World([AIResponse(content="Hello.")])
    await world.kit.create_room("ctx-1")
    await world.kit.add_participant("ctx-1", "alice")
    await world.kit.attach_channel("ctx-1", "agent")
    await world.kit.attach_channel("ctx-1", "a2a")
    aside = await world.handler.create_detached(
        "AskUserQuestion", {"question": "Lunch?"}, room_id="ctx-1"
    )
    async with world.http() as http:
        task = await world.send(http, text="Hi")
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(task.status.message.parts)) == ["Hello."]
    await world.handler.arelease(aside.pending_id)


async def test_a_revoked_token_is_refused() -> None:
    world = World([ask(), DONE])
    token = issue_token(SECRET, "alice")
    await world.handler.ledger.record_spent(
        token_entry(token_claims(SECRET, token)["jti"]), until=None
    )
    transport = httpx.ASGITransport(app=world.app)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers) as http:
        response = await http.post("/message:send", json={})
    assert response.status_code == 401
    assert await world.handler.list_pending() == []


async def test_another_callers_pending_id_in_ones_own_task_answers_nothing() -> None:
    """Mallory, on a task of her own in her own context, names Alice's pending id: her task
    asks again, and Alice's question stays open."""
    world = World([ask(), ask("Which size?"), DONE])
    async with world.http() as http:
        await world.send(http, text="Paint it")
    [alices] = await world.handler.list_pending(room_id="ctx-1")
    async with world.http("mallory") as http:
        task = await world.send(http, text="Size it", context_id="ctx-2")
        answer = {"pending_id": alices.pending_id, "answer": "red"}
        again = await world.send(http, data=answer, task=task, context_id="ctx-2")
    assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert get_text_parts(list(again.status.message.parts))[0].startswith("No open request")
    still = await world.handler.get_request(alices.pending_id)
    assert still is not None
    assert (still.status, still.result) == ("pending", None)


async def test_two_first_tasks_of_a_new_context_at_once_both_run(tmp_path: Path) -> None:
    """Two tasks open the same new context at the same moment (on a store where making
    its room twice is refused): the room is made once and both tasks complete."""
    questions, rooms = open_stores(f"sqlite:///{tmp_path / 'kit.db'}")
    world = World(
        [AIResponse(content="One."), AIResponse(content="Two.")], questions=questions, rooms=rooms
    )
    try:
        async with world.http() as http:
            ends = await asyncio.gather(
                world.send(http, text="Hi", context_id="ctx-9"),
                world.send(http, text="Hello", context_id="ctx-9"),
            )
    finally:
        await world.kit.close()
        await close_stores(questions, rooms)
    assert [end.status.state for end in ends] == [TaskState.TASK_STATE_COMPLETED] * 2


async def test_plain_text_with_two_questions_open_asks_which_one() -> None:
    """Two questions open: plain text answers neither and the task asks to name one; each
    data part then answers the one it names, and the task completes after both."""
    both = AIResponse(tool_calls=[*ask().tool_calls, *ask("Which size?").tool_calls])
    world = World([both, DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        first, second = await world.handler.list_pending(room_id="ctx-1")
        unclear = await world.send(http, text="blue", task=task)
        assert unclear.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "Name the request" in get_text_parts(list(unclear.status.message.parts))[0]
        assert len(await world.handler.list_pending(room_id="ctx-1")) == 2
        answer = {"pending_id": first.pending_id, "answer": "blue"}
        half = await world.send(http, data=answer, task=task)
        assert half.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert [d["pending_id"] for d in get_data_parts(list(half.status.message.parts))] == [
            second.pending_id
        ]
        answer = {"pending_id": second.pending_id, "answer": "large"}
        done = await world.send(http, data=answer, task=task)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED


async def test_an_approval_asks_with_its_digest_and_takes_a_decision() -> None:
    """A held tool call is ``input-required`` with kind ``approval`` and its arguments'
    digest; a plain "yes" is refused with what to send; a decision runs it once."""
    world = World([send(), AIResponse(content="Sent.")])
    async with world.http() as http:
        task = await world.send(http, text="Mail bob")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        _, [data] = asked(task)
        assert (data["kind"], data["digest"]) == ("approval", request.arguments_digest)
        assert len(str(data["digest"])) == 64
        refused = await world.send(http, text="yes", task=task)
        assert refused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        said = get_text_parts(list(refused.status.message.parts))[0]
        assert "decision" in said
        assert world.sent == []
        answer = {"pending_id": request.pending_id, "answer": {"decision": "approve"}}
        done = await world.send(http, data=answer, task=task)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert world.sent == [{"to": "bob@example.com"}]
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.settled_by == "alice"


async def test_an_approval_for_named_approvers_is_not_the_callers_to_decide() -> None:
    """The caller may see the approval its task asked for; deciding it takes an approver."""
    world = World([send(), AIResponse(content="Sent.")], approval=Approval(approvers=["boss"]))
    async with world.http() as http:
        task = await world.send(http, text="Mail bob")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        answer = {"pending_id": request.pending_id, "answer": {"decision": "approve"}}
        refused = await world.send(http, data=answer, task=task)
    assert refused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    said = get_text_parts(list(refused.status.message.parts))[0]
    assert "approvers" in said
    assert world.sent == []
    still = await world.handler.get_request(request.pending_id)
    assert still is not None
    assert still.status is PendingInputStatus.PENDING


@pytest.mark.parametrize("context_id", ["c" * 257, "c\x00", "c "], ids=["long", "nul", "space"])
async def test_a_context_id_that_is_no_room_id_is_rejected(context_id: str) -> None:
    world = World([DONE])
    async with world.http() as http:
        task = await world.send(http, text="Hi", context_id=context_id)
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    assert get_text_parts(list(task.status.message.parts))[0].startswith("The contextId ")
    assert world.provider.calls == []
    assert await world.kit.store.get_room(context_id) is None


async def test_an_answer_after_one_given_elsewhere_is_told_the_one_that_stands() -> None:
    """The request was answered on the desk first: the caller's different answer changes
    nothing, and the task's reply starts by saying which answer stands."""
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        assert await world.handler.aresolve(request.pending_id, "green", by="bob", surface="desk")
        answer = {"pending_id": request.pending_id, "answer": "red"}
        done = await world.send(http, data=answer, task=task)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(done.status.message.parts)) == [
        f"Request {request.pending_id} was answered first by bob: green",
        "Blue it is.",
    ]
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert (settled.result, settled.settled_by) == ("green", "bob")


async def test_a_body_over_the_limit_is_refused_before_anything_reads_it() -> None:
    """As on the desk, AG-UI and MCP: a 300 KiB message is a 413, nothing stored or sent to
    the model; one nested too deep is a 400."""
    world = World([AIResponse(content="Never.")])
    huge = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x" * 300_000}]}}
    deep: Any = "x"
    for _ in range(200):
        deep = [deep]
    async with world.http() as http:
        too_big = await http.post("/message:send", json=huge)
        too_deep = await http.post("/message:send", json={"message": deep})
    assert too_big.status_code == 413
    assert too_deep.status_code == 400
    assert world.provider.calls == []


@pytest.mark.parametrize("field", ["anwser", None], ids=["misspelt", "missing"])
async def test_a_data_part_without_an_answer_asks_again(field: str | None) -> None:
    """A data part naming the request but holding no ``answer`` settles nothing: the task
    asks again, saying which field is missing."""
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        data: dict[str, Any] = {"pending_id": request.pending_id}
        if field is not None:
            data[field] = "blue"
        again = await world.send(http, data=data, task=task)
    assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    [problem, question] = get_text_parts(list(again.status.message.parts))
    assert '"answer"' in problem
    assert question == "Which colour?"
    assert [r.pending_id for r in await world.handler.list_pending()] == [request.pending_id]


@pytest.mark.parametrize(
    "data", [[1, 2], 5, {"answer": "blue"}], ids=["a list", "a number", "no pending_id"]
)
async def test_a_data_part_naming_no_request_is_not_taken_as_blank_text(data: Any) -> None:
    """A follow-up holding only a data part that names no request answers nothing, and the
    task says to send text or a data part naming the request, not that the answer is
    empty."""
    world, request, again = await asked_again(data)
    [problem, question] = get_text_parts(list(again.status.message.parts))
    assert "no text, nor a data part naming a request" in problem
    assert '{"pending_id": ..., "answer": ...}' in problem
    assert question == "Which colour?"
    assert [r.pending_id for r in await world.handler.list_pending()] == [request.pending_id]


async def test_each_data_part_of_a_follow_up_answers_its_own_request() -> None:
    """Two data parts answer two questions: both are taken, and a third part naming no
    open request is said beside them, taking none of them back."""
    both = AIResponse(tool_calls=[*ask().tool_calls, *ask("Which size?").tool_calls])
    world = World([both, DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        first, second = await world.handler.list_pending(room_id="ctx-1")
        client = world.client(http)
        message = Message(
            role=Role.ROLE_USER,
            parts=[
                new_data_part({"pending_id": first.pending_id, "answer": "blue"}),
                new_data_part({"pending_id": "0" * 32, "answer": "red"}),
                new_data_part({"pending_id": second.pending_id, "answer": "large"}),
            ],
            message_id="m-both",
            context_id="ctx-1",
            task_id=task.id,
        )
        done = [
            response.task
            async for response in client.send_message(SendMessageRequest(message=message))
            if response.HasField("task")
        ][-1]
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    said = get_text_parts(list(done.status.message.parts))
    assert said == [f"No open request '{'0' * 32}' of yours here", "Blue it is."]
    answers = [await world.handler.get_request(r.pending_id) for r in (first, second)]
    assert [(a.status, a.result) for a in answers if a is not None] == [
        (PendingInputStatus.RESOLVED, "blue"),
        (PendingInputStatus.RESOLVED, "large"),
    ]


BLANK: dict[str, dict[str, Any]] = {
    "a data part only": {"data": {"colour": "blue"}},
    "an empty text": {"text": ""},
    "a blank text": {"text": "  \n\t "},
    "a blank text and a data part": {"text": " ", "data": {"colour": "blue"}},
}


@pytest.mark.parametrize("message", list(BLANK.values()), ids=list(BLANK))
async def test_a_new_task_without_text_is_rejected_before_anything_runs(
    message: dict[str, Any],
) -> None:
    """A first message whose text is empty or blank would run the model on no prompt: the
    task is rejected, saying to send a text part; nothing reaches the model or the room,
    and a message with text then runs as ever."""
    world = World([DONE])
    async with world.http() as http:
        task = await world.send(http, **message)
        assert task.status.state == TaskState.TASK_STATE_REJECTED
        [said] = get_text_parts(list(task.status.message.parts))
        assert "send the request as a text part" in said
        assert world.provider.calls == []
        assert await world.kit.store.get_room("ctx-1") is None
        done = await world.send(http, text="Paint it")
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(done.status.message.parts)) == ["Blue it is."]
    [call] = world.provider.calls
    assert call.messages[-1].content == "Paint it"

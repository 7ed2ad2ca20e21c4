"""RoomKitExecutor over the SDK's routes and client: input-required, answered by a message."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import CancelTaskRequest, TaskState
from a2a.utils.errors import TaskNotFoundError
from a2a_world import FileTaskStore, World, ask, asked, gone, restarted

from roomkit.adapters.a2a import RoomKitExecutor
from roomkit.desk.stores import close_stores, open_stores
from roomkit.providers.ai.base import AIResponse

DONE = AIResponse(content="Blue it is.")


async def test_a_held_question_puts_the_task_in_input_required() -> None:
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    texts, [data] = asked(task)
    [request] = await world.handler.list_pending(room_id="ctx-1")
    assert texts == ["Which colour?"]
    assert data["pending_id"] == request.pending_id
    assert data["kind"] == "question"
    assert str(data["expires_at"]).endswith("Z")
    assert set(data) == {"pending_id", "kind", "schema", "expires_at", "digest"}


async def test_a_follow_up_in_text_answers_as_the_caller_and_completes() -> None:
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        done = await world.send(http, text="blue", task=task)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(done.status.message.parts)) == ["Blue it is."]
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert (settled.result, settled.settled_by) == ("blue", "alice")


async def test_a_data_part_names_the_request_it_answers() -> None:
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        answer = {"pending_id": request.pending_id, "answer": "green"}
        done = await world.send(http, data=answer, task=task)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.result == "green"


async def test_a_new_tasks_first_message_answers_no_other_tasks_question() -> None:
    """A second task of the context, started while the first one's question is open, starts
    a turn: the question waits for the first task's follow-up, which answers it."""
    world = World([ask(), DONE, ask("Which slogan?"), AIResponse(content="Slogan set.")])
    async with world.http() as http:
        first = await world.send(http, text="Paint the logo")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        await world.send(http, text="Also write a slogan")
        assert [r.pending_id for r in await world.handler.list_pending()] == [request.pending_id]
        await world.send(http, text="blue", task=first)
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert (settled.result, settled.settled_by) == ("blue", "alice")
    said = [event.content.body for event in await world.kit.store.list_events("ctx-1")]
    assert "Also write a slogan" in said


async def test_a_caller_without_a_token_is_refused() -> None:
    world = World([ask(), DONE])
    async with world.http(actor=None) as http:
        response = await http.post("/message:send", json={})
    assert response.status_code == 401
    assert await world.handler.list_pending() == []


async def test_someone_elses_follow_up_does_not_answer() -> None:
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
    [request] = await world.handler.list_pending(room_id="ctx-1")
    await world.kit.add_participant("ctx-1", "mallory")
    async with world.http("mallory") as http:
        answer = {"pending_id": request.pending_id, "answer": "red"}
        with pytest.raises(TaskNotFoundError):
            await world.send(http, data=answer, task=task)
    assert [r.pending_id for r in await world.handler.list_pending()] == [request.pending_id]


async def test_a_request_that_timed_out_fails_the_task() -> None:
    world = World([ask(), DONE], timeout=0.05)
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        # The turn goes on without an answer once the deadline passes.
        [turn] = [t for t in asyncio.all_tasks() if t.get_name() == "a2a-turn-ctx-1"]
        await turn
        failed = await world.send(http, text="blue", task=task)
    assert failed.status.state == TaskState.TASK_STATE_FAILED
    [said] = get_text_parts(list(failed.status.message.parts))
    assert "AskUserQuestion" in said
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.status == "timed_out"


async def test_a_request_withdrawn_meanwhile_cancels_the_task() -> None:
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        assert await world.handler.arelease(request.pending_id)
        [turn] = [t for t in asyncio.all_tasks() if t.get_name() == "a2a-turn-ctx-1"]
        await turn
        canceled = await world.send(http, text="blue", task=task)
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    [said] = get_text_parts(list(canceled.status.message.parts))
    assert request.pending_id in said


async def test_cancelling_the_task_withdraws_its_open_questions() -> None:
    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        canceled = await world.client(http).cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    withdrawn = await world.handler.get_request(request.pending_id)
    assert withdrawn is not None
    assert withdrawn.status == "rejected"
    assert withdrawn.withdrawn


async def test_an_answer_after_a_restart_settles_the_request_and_completes_the_task(
    tmp_path: Path,
) -> None:
    """The server process goes between input-required and the answering message; the new
    one (same stores, the turn re-driven) takes the answer and completes the task."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    questions, rooms = open_stores(url)
    first = World([ask(), DONE], questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path))
    async with first.http() as http:
        task = await first.send(http, text="Paint it")
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    [request] = await first.handler.list_pending(room_id="ctx-1")
    await gone(first, questions, rooms)

    async with restarted(url, tmp_path, [DONE]) as second, second.http() as http:
        done = await second.send(http, text="blue", task=task)
        settled = await second.handler.get_request(request.pending_id)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(done.status.message.parts)) == ["Blue it is."]
    assert settled is not None
    assert (settled.status, settled.result, settled.settled_by) == ("resolved", "blue", "alice")


async def test_the_evidence_record_names_the_a2a_task_that_asked() -> None:
    """The task that showed the request is in its history, and its evidence record's
    ``task_id`` is that task, not the room."""
    from roomkit.adapters.a2a_evidence import evidence_records

    world = World([ask(), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        await world.send(http, text="blue", task=task)
    history = await world.handler.history(request.pending_id)
    shown = [e for e in history if e["type"] == "shown"]
    assert [(e["actor"], e["surface"], e["task"]) for e in shown] == [("alice", "a2a", task.id)]
    [record] = evidence_records({request.pending_id: history})
    assert task.id != "ctx-1"
    assert record["task_id"] == task.id


async def test_the_exported_evidence_names_the_a2a_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``roomkit audit export --format a2a-evidence`` on the store: the record of a request an
    A2A task asked carries that task's id, and the chain checks."""
    from roomkit.adapters.a2a_evidence import chain_problem
    from roomkit.cli import main

    url = f"sqlite:///{tmp_path / 'kit.db'}"
    questions, rooms = open_stores(url)
    world = World([ask(), DONE], questions=questions, rooms=rooms)
    try:
        async with world.http() as http:
            task = await world.send(http, text="Paint it")
            await world.send(http, text="blue", task=task)
    finally:
        await world.kit.close()
        await world.handler.close()
        await close_stores(questions, rooms)
    capsys.readouterr()
    exported = await asyncio.to_thread(
        main, ["audit", "export", "--store", url, "--format", "a2a-evidence"]
    )
    assert exported == 0
    [record] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (record["task_id"], record["decision"], record["outcome"]) == (
        task.id,
        "ALLOW",
        "resolved by alice on a2a",
    )
    assert chain_problem([record]) is None


async def test_an_answer_taken_by_another_process_completes_the_task_with_the_reply(
    tmp_path: Path,
) -> None:
    """Two servers on one store: the task's turn waits on the first, the answer comes to the
    second; the turn goes on in the first, and the second's task says what it replied."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    (questions, rooms), (other_questions, other_rooms) = open_stores(url), open_stores(url)
    asking = World([ask(), DONE], questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path))
    answering = World([], questions=other_questions, rooms=other_rooms, tasks=asking.tasks)
    try:
        async with asking.http() as http:
            task = await asking.send(http, text="Paint it")
        async with answering.http() as http:
            done = await answering.send(http, text="blue", task=task)
    finally:
        await asking.kit.close()
        await answering.kit.close()
        await close_stores(questions, rooms, other_questions, other_rooms)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(list(done.status.message.parts)) == ["Blue it is."]


async def test_plain_text_on_a_task_answers_no_question_only_another_task_showed() -> None:
    """The first task's question is answered on the desk; a second task of the context then
    asks its own. Plain text on the first task answers nothing and says which task waits;
    the second task's plain text answers its question."""
    world = World([ask(), DONE, ask("Which slogan?"), AIResponse(content="Slogan set.")])
    async with world.http() as http:
        first = await world.send(http, text="Paint the logo")
        [colour] = await world.handler.list_pending(room_id="ctx-1")
        assert await world.handler.aresolve(colour.pending_id, "blue", by="alice", surface="desk")
        second = await world.send(http, text="Also write a slogan")
        [slogan] = await world.handler.list_pending(room_id="ctx-1")
        assert [d["pending_id"] for d in asked(second)[1]] == [slogan.pending_id]
        stray = await world.send(http, text="Make it red", task=first)
        still = await world.handler.get_request(slogan.pending_id)
        assert still is not None
        assert (still.status, still.result) == ("pending", None)
        said = get_text_parts(list(stray.status.message.parts))[0]
        assert said == (
            f"Task {first.id} shows no open request: the message answered none. "
            f"Waiting: request {slogan.pending_id} (task {second.id})"
        )
        done = await world.send(http, text="Fresh ideas", task=second)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    settled = await world.handler.get_request(slogan.pending_id)
    assert settled is not None
    assert (settled.result, settled.settled_by) == ("Fresh ideas", "alice")


async def test_a_huge_agent_name_that_is_no_channel_is_quoted_cut_short() -> None:
    world = World([DONE])
    with pytest.raises(ValueError, match=r"^No channel 'aaa.*\.\.\. in the kit") as refused:
        RoomKitExecutor(world.kit, agent="a" * 1_000_000)
    assert len(str(refused.value)) < 200
    await world.close()

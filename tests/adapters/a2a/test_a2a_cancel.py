"""Cancelling an A2A task withdraws what that task asked, and nothing another task or
another person still has to answer; the task's own turn stops (its whole story is in
test_a2a_cancel_turn)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.server.cluster import LegacyTaskStoreAdapter
from a2a.server.context import ServerCallContext
from a2a.types import CancelTaskRequest, TaskState
from a2a_world import FileTaskStore, World, ask, asked, gone, left_on_a_call, restarted, send

from roomkit import Approval
from roomkit.desk.stores import close_stores, open_stores
from roomkit.providers.ai.base import AIResponse, AIToolCall
from roomkit.tools.approvals import approve


def told(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """What the log told of errors and of turns ended elsewhere: each such record's level,
    and ``"Turn ended elsewhere"`` or its message."""
    return [
        (record.levelname, "Turn ended elsewhere" if ended else record.getMessage())
        for record in caplog.records
        if (ended := "was ended elsewhere" in record.getMessage())
        or record.levelno >= logging.ERROR
    ]


async def test_cancelling_one_task_leaves_the_request_another_task_of_the_context_showed() -> None:
    """Two tasks of one caller share a context: the second shows the first one's open
    question too. Cancelling the second leaves that question open, and the first task
    goes on with its answer."""
    world = World([ask(), AIResponse(content="Blue it is."), AIResponse(content="Slogan set.")])
    async with world.http() as http:
        first = await world.send(http, text="Paint the logo")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        second = await world.send(http, text="Also write a slogan")
        assert [d["pending_id"] for d in asked(second)[1]] == [request.pending_id]
        canceled = await world.client(http).cancel_task(CancelTaskRequest(id=second.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        assert [r.pending_id for r in await world.handler.list_pending()] == [request.pending_id]
        [said] = get_text_parts(list(canceled.status.message.parts))
        assert f"left open: {request.pending_id} (another task" in said
        done = await world.send(http, text="blue", task=first)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert "Blue it is." in get_text_parts(list(done.status.message.parts))
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert (settled.result, settled.settled_by) == ("blue", "alice")


async def test_cancelling_a_task_withdraws_the_approval_its_own_turn_waits_on() -> None:
    """The caller may not decide the approval their task's turn waits on, but the cancel
    stops that turn: the approval is withdrawn with its call, and a later decision of its
    approver runs nothing."""
    world = World([send(), AIResponse(content="Sent.")], approval=Approval(approvers=["boss"]))
    async with world.http() as http:
        task = await world.send(http, text="Mail bob")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        canceled = await world.client(http).cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    [said] = get_text_parts(list(canceled.status.message.parts))
    assert said == f"Cancelled; withdrawn: {request.pending_id}"
    withdrawn = await world.handler.get_request(request.pending_id)
    assert withdrawn is not None
    assert withdrawn.withdrawn
    assert not await world.handler.aresolve(request.pending_id, approve(), by="boss")
    assert world.sent == []
    assert len(world.provider.calls) == 1


async def test_cancelling_a_task_withdraws_its_own_question_and_says_so() -> None:
    world = World([ask(), AIResponse(content="Blue it is.")])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        canceled = await world.client(http).cancel_task(CancelTaskRequest(id=task.id))
    [said] = get_text_parts(list(canceled.status.message.parts))
    assert said == f"Cancelled; withdrawn: {request.pending_id}"
    withdrawn = await world.handler.get_request(request.pending_id)
    assert withdrawn is not None
    assert withdrawn.withdrawn
    assert len(world.provider.calls) == 1


async def test_a_cancel_after_a_restart_withdraws_what_the_task_asked(tmp_path: Path) -> None:
    """The server restarts while the task waits on an approval: the SDK only writes the
    cancel down, and it is still carried out. The approval is withdrawn, the task's
    message says so, and the re-driven turn sends nothing."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    task, request = await left_on_a_call(tmp_path)

    script = [AIResponse(content="Not sent.")]
    async with restarted(url, tmp_path, script) as second, second.http() as http:
        canceled = await second.client(http).cancel_task(CancelTaskRequest(id=task.id))
        withdrawn = await second.handler.get_request(request.pending_id)
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert get_text_parts(list(canceled.status.message.parts)) == [
        f"Cancelled; withdrawn: {request.pending_id}"
    ]
    assert withdrawn is not None
    assert withdrawn.withdrawn
    assert second.sent == []


@pytest.mark.parametrize("approvers", [[], ["boss"]], ids=["the-callers", "named-approvers"])
async def test_a_cancel_after_a_restart_cuts_the_re_driven_turn(
    approvers: list[str], tmp_path: Path
) -> None:
    """The turn ``resume_pending()`` re-drives is cut as a live turn is: the approval it waits
    on is withdrawn whoever decides it, the model is not asked again, and no later restart
    runs the turn."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    approval = Approval(approvers=approvers)
    task, request = await left_on_a_call(tmp_path, approval)

    script = [AIResponse(content="Not sent.")]
    restart = restarted(url, tmp_path, script, approval=approval, at_call=True)
    async with restart as second, second.http() as http:
        canceled = await second.client(http).cancel_task(CancelTaskRequest(id=task.id))
        assert not await second.handler.aresolve(request.pending_id, approve(), by="boss")
        owed = await second.kit.store.open_turns()
    assert get_text_parts(list(canceled.status.message.parts)) == [
        f"Cancelled; withdrawn: {request.pending_id}"
    ]
    assert owed == []
    assert second.provider.calls == []
    assert second.sent == []


# One server here: no other replica to stream events to.
@pytest.mark.filterwarnings("ignore:A VersionedTaskStore was configured without an event_stream")
async def test_a_cancel_written_to_a_versioned_task_store_is_carried_out(tmp_path: Path) -> None:
    """The request handler given a ``VersionedTaskStore`` (the store replicas share) writes
    a cancel of a task no replica holds there, as a versioned write with its status event:
    it is carried out, and the stored task says what it withdrew."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    questions, rooms = open_stores(url)
    tasks = LegacyTaskStoreAdapter(FileTaskStore(tmp_path))
    first = World([ask()], questions=questions, rooms=rooms, tasks=tasks)
    async with first.http() as http:
        task = await first.send(http, text="Paint it")
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    [request] = await first.handler.list_pending(room_id="ctx-1")
    await gone(first, questions, rooms)

    restart = restarted(url, tmp_path, [], versioned=True, at_call=True)
    async with restart as second, second.http() as http:
        canceled = await second.client(http).cancel_task(CancelTaskRequest(id=task.id))
        withdrawn = await second.handler.get_request(request.pending_id)
        stored = await second.tasks.get(task.id, ServerCallContext())
    said = [f"Cancelled; withdrawn: {request.pending_id}"]
    assert get_text_parts(list(canceled.status.message.parts)) == said
    assert stored is not None
    assert get_text_parts(list(stored.task.status.message.parts)) == said
    assert withdrawn is not None
    assert withdrawn.withdrawn
    assert second.provider.calls == []


async def test_a_cancel_on_another_replica_withdraws_the_approval_the_re_driven_turn_waits_on(
    tmp_path: Path,
) -> None:
    """One replica re-drives the turn, which waits on an approval its approvers decide; the
    other takes the cancel. The approval is withdrawn all the same: its approver's later
    decision sends nothing."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    approval = Approval(approvers=["boss"])
    task, request = await left_on_a_call(tmp_path, approval)

    questions, rooms = open_stores(url)
    other = World([], questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path))
    script = [AIResponse(content="Sent.")]
    restart = restarted(url, tmp_path, script, approval=approval, at_call=True)
    try:
        async with restart as redriving, other.http() as http:
            canceled = await other.client(http).cancel_task(CancelTaskRequest(id=task.id))
            decided = await redriving.handler.aresolve(request.pending_id, approve(), by="boss")
    finally:
        await other.close()
        await close_stores(questions, rooms)
    assert get_text_parts(list(canceled.status.message.parts)) == [
        f"Cancelled; withdrawn: {request.pending_id}"
    ]
    assert not decided
    assert redriving.sent == []


async def test_a_cancel_on_another_replica_stops_the_re_driven_turn_at_its_next_step(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One replica re-drives the turn, which waits on its caller's question; the other takes
    the cancel and ends the turn in the journal. Told its question was withdrawn, the
    re-driven turn records nothing more and asks the model nothing: it stops with one
    line saying it was ended elsewhere, and nothing is logged as an error."""
    caplog.set_level(logging.INFO, logger="roomkit")
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    task, request = await left_on_a_call(tmp_path, call=ask(), text="Paint it")

    questions, rooms = open_stores(url)
    other = World([], questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path))
    script = [AIResponse(content="Painted anyway.")]
    try:
        restart = restarted(url, tmp_path, script, at_call=True)
        async with restart as redriving, other.http() as http:
            canceled = await other.client(http).cancel_task(CancelTaskRequest(id=task.id))
        owed = await rooms.open_turns()
    finally:
        await other.close()
        await close_stores(questions, rooms)
    assert get_text_parts(list(canceled.status.message.parts)) == [
        f"Cancelled; withdrawn: {request.pending_id}"
    ]
    assert owed == []
    assert redriving.provider.calls == []
    assert told(caplog) == [("INFO", "Turn ended elsewhere")]


@pytest.mark.parametrize("questions_asked", [1, 2], ids=["one-call", "two-calls"])
async def test_a_cancel_on_another_replica_stops_the_live_turn_at_its_next_step(
    questions_asked: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A turn runs on one replica and waits on its caller's questions (one call, or two of
    one round); the other replica, on the same stores, takes the cancel and ends the turn
    in the journal. Told its questions were withdrawn, the running turn stops there: it
    asks the model nothing more, adds nothing to the room, fails nothing, and says once
    that it was ended elsewhere."""
    caplog.set_level(logging.INFO, logger="roomkit")
    questions, rooms = open_stores(f"sqlite:///{tmp_path / 'kit.db'}")
    calls = [
        AIToolCall(id=f"c{n}", name="AskUserQuestion", arguments={"question": f"Colour {n}?"})
        for n in range(questions_asked)
    ]
    script = [AIResponse(tool_calls=calls), AIResponse(content="Painted anyway.")]
    running = World(script, questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path))
    other = World([], questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path))
    try:
        async with running.http() as http:
            task = await running.send(http, text="Paint it")
        asked_ids = {r.pending_id for r in await running.handler.list_pending(room_id="ctx-1")}
        [turn] = [t for t in asyncio.all_tasks() if t.get_name() == "a2a-turn-ctx-1"]
        history = await rooms.list_events("ctx-1", limit=100)
        async with other.http() as http:
            canceled = await other.client(http).cancel_task(CancelTaskRequest(id=task.id))
        failures = await turn
        recorded = await rooms.list_events("ctx-1", limit=100)
        owed = await rooms.open_turns()
    finally:
        await other.close()
        await running.close()
        await close_stores(questions, rooms)
    [said] = get_text_parts(list(canceled.status.message.parts))
    assert said.startswith("Cancelled; withdrawn: ")
    assert set(said.removeprefix("Cancelled; withdrawn: ").split(", ")) == asked_ids
    assert len(asked_ids) == questions_asked
    assert (failures, owed) == ([], [])
    assert recorded == history
    assert len(running.provider.calls) == 1
    assert told(caplog) == [("INFO", "Turn ended elsewhere")]

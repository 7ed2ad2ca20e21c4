"""A cancel that arrives at start-up before the task's turn is re-driven (the server serves
while ``resume_pending()`` reads the journal, or before it is called at all) still stops
that turn: it never runs again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import CancelTaskRequest, GetTaskRequest, Task, TaskState
from a2a_world import FileTaskStore, World, gone, left_on_a_call
from tests.core.held_journal import HeldJournal

from roomkit import Approval, HookResult, HookTrigger
from roomkit.desk.stores import close_stores, open_stores
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse
from roomkit.tools.approvals import approve


class Thinking(AIProvider):
    """A model that never ends its round: the process goes while it thinks."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    @property
    def model_name(self) -> str:
        return "thinking"

    async def generate(self, context: AIContext) -> AIResponse:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("never reached")


@contextlib.asynccontextmanager
async def starting(
    tmp_path: Path, script: list[AIResponse], approval: Approval | None = None
) -> AsyncIterator[tuple[World, HeldJournal, asyncio.Task[object]]]:
    """The next server process, serving while its re-drive's journal read is held; its
    re-drive, awaited before its stores close."""
    questions, opened = open_stores(f"sqlite:///{tmp_path / 'kit.db'}")
    await opened.close()
    held = HeldJournal(tmp_path / "kit.db")
    world = World(
        script, questions=questions, rooms=held, tasks=FileTaskStore(tmp_path), approval=approval
    )
    redrive: asyncio.Task[object] = asyncio.create_task(world.kit.resume_pending())
    try:
        await held.reading.wait()
        yield world, held, redrive
    finally:
        held.go.set()
        await redrive
        await world.close()
        await close_stores(questions, held)


async def cancel(world: World, task: Task) -> Task:
    async with world.http() as http:
        return await world.client(http).cancel_task(CancelTaskRequest(id=task.id))


@pytest.mark.parametrize("approvers", [[], ["boss"]], ids=["the-callers", "named-approvers"])
async def test_a_cancel_while_the_journal_is_read_withdraws_what_the_turn_waited_on(
    approvers: list[str], tmp_path: Path
) -> None:
    """The cancel answers while the re-drive still reads the journal: the turn it then finds
    is not run, the approval it waited on is withdrawn whoever decides it (a later decision
    sends nothing), and the model is not asked again."""
    approval = Approval(approvers=approvers)
    task, request = await left_on_a_call(tmp_path, approval)

    script = [AIResponse(content="Not sent.")]
    async with starting(tmp_path, script, approval) as (second, held, redrive):
        canceled = await cancel(second, task)
        held.go.set()
        decided = await second.handler.aresolve(request.pending_id, approve(), by="boss")
        replies = await redrive
        withdrawn = await second.handler.get_request(request.pending_id)
        owed = await held.open_turns()
    assert get_text_parts(list(canceled.status.message.parts)) == [
        f"Cancelled; withdrawn: {request.pending_id}"
    ]
    assert not decided
    assert withdrawn is not None
    assert withdrawn.withdrawn
    assert (replies, owed) == ([], [])
    assert second.provider.calls == []
    assert second.sent == []


async def test_a_cancel_while_the_journal_is_read_never_runs_a_turn_cut_mid_round(
    tmp_path: Path,
) -> None:
    """The process went while the model thought (no request to withdraw): the turn the
    re-drive reads after the cancel is ended without asking the model again."""
    questions, rooms = open_stores(f"sqlite:///{tmp_path / 'kit.db'}")
    model = Thinking()
    first = World(
        [], questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path), provider=model
    )
    async with first.http() as http:
        task = await first.send(http, text="Mail bob", immediately=True)
        await model.asked.wait()
    await gone(first, questions, rooms)

    async with starting(tmp_path, [AIResponse(content="Mailed.")]) as (second, held, redrive):
        canceled = await cancel(second, task)
        held.go.set()
        replies = await redrive
        owed = await held.open_turns()
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert (replies, owed) == ([], [])
    assert second.provider.calls == []


@pytest.mark.parametrize("approvers", [[], ["boss"]], ids=["the-callers", "named-approvers"])
@pytest.mark.parametrize("resumer", ["here", "elsewhere"])
async def test_a_cancel_before_resume_pending_begins_is_never_re_driven(
    approvers: list[str], resumer: str, tmp_path: Path
) -> None:
    """The next server serves before the application calls ``resume_pending()``, and takes
    the cancel then: the re-drive that comes later, here or in another process on the same
    stores, never runs the task's turn, the approval it waited on stays withdrawn whoever
    decides it, and the task stays canceled."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    approval = Approval(approvers=approvers)
    task, request = await left_on_a_call(tmp_path, approval)

    script = [AIResponse(content="Sent.")]
    questions, rooms = open_stores(url)
    second = World(
        script, questions=questions, rooms=rooms, tasks=FileTaskStore(tmp_path), approval=approval
    )
    later = World(script, questions=questions, rooms=rooms, approval=approval)
    resuming = second if resumer == "here" else later
    calls: list[str] = []

    @resuming.kit.hook(HookTrigger.BEFORE_TOOL_USE)
    async def calling(event: Any, context: Any) -> HookResult:
        calls.append(event.name)
        return HookResult.allow()

    try:
        canceled = await cancel(second, task)
        history = await rooms.list_events("ctx-1", limit=100)
        replies = await resuming.kit.resume_pending()
        recorded = await rooms.list_events("ctx-1", limit=100)
        decided = await resuming.handler.aresolve(request.pending_id, approve(), by="boss")
        withdrawn = await resuming.handler.get_request(request.pending_id)
        owed = await resuming.kit.store.open_turns()
        async with second.http() as http:
            stored = await second.client(http).get_task(GetTaskRequest(id=task.id))
    finally:
        await later.close()
        await second.close()
        await close_stores(questions, rooms)
    assert get_text_parts(list(canceled.status.message.parts)) == [
        f"Cancelled; withdrawn: {request.pending_id}"
    ]
    assert (replies, owed) == ([], [])
    # The turn never ran again: its call was not reached, and it recorded nothing.
    assert calls == []
    assert recorded == history
    assert not decided
    assert withdrawn is not None
    assert withdrawn.withdrawn
    assert resuming.provider.calls == []
    assert resuming.sent == []
    assert stored.status.state == TaskState.TASK_STATE_CANCELED

"""An answer to a run that ended (terminated, timed out) before anyone answered: the person
is told at once, and every open request of the run is withdrawn, saying how it ended."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import timedelta
from typing import Any, Unpack

import pytest
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.worker import Worker
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import wait_for_event
from tests.adapters.temporal.workflows import AskAtOnce, AskThenFail, ContinueWhileAsking

from roomkit.adapters.temporal import TemporalUpdates
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.base import PendingFilters
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)

TERMINATED = "the workflow ended (terminated) before it was answered"
TIMED_OUT = "the workflow ended (timed out) before it was answered"
FAILED = "the workflow ended (failed) before it was answered"
CONTINUED = "the workflow continued as new before it was answered"


async def asking(world: World, handle: WorkflowHandle, count: int) -> list[str]:
    """The ids of the ``count`` requests the workflow made, once it waits on every one of
    them (each ask's timer has started)."""
    ids = [await world.created.next() for _ in range(count)]
    timers = 0
    async for event in handle.fetch_history_events(wait_new_event=True):
        timers += _timer(event)
        if timers == count:
            return ids
    raise AssertionError(f"workflow {handle.id} closed before it waited on {count} asks")


def _timer(event: HistoryEvent) -> int:
    return int(event.HasField("timer_started_event_attributes"))


async def withdrawn_for(world: World, pending_id: str) -> tuple[Any, ...]:
    """How the request ended, and the reason its ``settled`` history entry gives."""
    request = await world.desk_handler.get_request(pending_id)
    assert isinstance(request, PendingInput)
    [settled] = [e for e in await world.desk_handler.history(pending_id) if e["type"] == "settled"]
    return (
        request.status,
        request.withdrawn,
        request.reject_reason,
        settled.get("withdrawn"),
        settled.get("reason"),
    )


def ended(reason: str) -> tuple[Any, ...]:
    return (PendingInputStatus.REJECTED, True, reason, True, reason)


@SQLITE_ONLY
async def test_an_answer_to_a_terminated_run_gets_409_and_withdraws_its_open_requests(
    world: World,
) -> None:
    """The desk answers 409 as for any request that ended; the run's three requests are
    withdrawn saying why, and a second answer gets the same 409."""
    async with running(world.worker(AskAtOnce), world.notifier(handler=world.desk_handler)):
        handle = await world.start(AskAtOnce, 3)
        ids = await asking(world, handle, 3)
        await handle.terminate("the trip was called off")
        first = await world.answer(ids[0], "alice", {"answer": "Hotel H"})
        again = await world.answer(ids[0], "alice", {"answer": "Hotel H"})
        other = await world.answer(ids[1], "alice", {"answer": "Hotel I"})
    assert (first.status_code, first.json()) == (409, {"detail": f"Withdrawn: {TERMINATED}"})
    assert (again.status_code, again.json()) == (409, {"detail": f"Withdrawn: {TERMINATED}"})
    assert (other.status_code, other.json()) == (409, {"detail": f"Withdrawn: {TERMINATED}"})
    assert await world.desk_handler.list_pending() == []
    assert [await withdrawn_for(world, pending_id) for pending_id in ids] == [ended(TERMINATED)] * 3


@SQLITE_ONLY
async def test_aresolve_on_a_timed_out_run_returns_false_and_withdraws_its_open_requests(
    world: World,
) -> None:
    """``aresolve`` refuses the answer as for a request no longer open (``False``)."""
    async with running(world.worker(AskAtOnce), world.notifier(handler=world.desk_handler)):
        handle = await world.client.start_workflow(
            AskAtOnce,
            2,
            id=f"wf-{uuid.uuid4().hex[:8]}",
            task_queue=world.task_queue,
            execution_timeout=timedelta(seconds=2),
        )
        ids = await asking(world, handle, 2)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        answered = await world.desk_handler.aresolve(ids[1], "too late", by="alice")
        again = await world.desk_handler.aresolve(ids[1], "too late", by="alice")
    assert (answered, again) == (False, False)
    assert await world.desk_handler.list_pending() == []
    assert [await withdrawn_for(world, pending_id) for pending_id in ids] == [ended(TIMED_OUT)] * 2


@SQLITE_ONLY
async def test_a_delivery_that_finds_the_run_terminated_withdraws_its_other_requests(
    world: World,
) -> None:
    """An answer given where no one checks the run (a process without the surface) is
    refused by the delivery, which withdraws the run's requests still open."""
    async with running(world.worker(AskAtOnce), notifier := world.notifier()):
        handle = await world.start(AskAtOnce, 2)
        ids = await asking(world, handle, 2)
        await handle.terminate("the trip was called off")
        assert await world.worker_handler.aresolve(ids[0], "Hotel H", by="alice")
        await notifier.wait_idle()
    [delivered] = [e for e in await world.desk_handler.history(ids[0]) if e["type"] == "delivered"]
    assert (delivered["accepted"], delivered["refused"]) == (
        False,
        "the workflow ended (terminated) before it took the answer",
    )
    assert await world.desk_handler.list_pending() == []
    assert await withdrawn_for(world, ids[1]) == ended(TERMINATED)


@SQLITE_ONLY
async def test_an_answer_to_a_run_its_retry_asks_again_for_is_refused_and_the_retry_answered(
    world: World,
) -> None:
    """A retry starts its asks afresh: the failed run's open request is withdrawn when
    answered (the answer would reach no run), and the retry's request takes the answer."""
    async with running(world.worker(AskThenFail), world.notifier(handler=world.desk_handler)):
        handle = await world.start(AskThenFail, retry_policy=RetryPolicy(maximum_attempts=2))
        [first] = await asking(world, handle, 1)
        await handle.signal(AskThenFail.fail)
        retried = await world.created.next()
        late = await world.answer(first, "alice", {"answer": "Hotel H"})
        answered = await world.answer(retried, "alice", {"answer": "Hotel I"})
        result = await handle.result()
    assert (late.status_code, late.json()) == (409, {"detail": f"Withdrawn: {FAILED}"})
    assert await withdrawn_for(world, first) == ended(FAILED)
    assert (answered.status_code, result) == (200, {"answer": "Hotel I"})


@SQLITE_ONLY
async def test_an_answer_to_a_run_that_continued_as_new_is_refused_and_the_new_run_answered(
    world: World,
) -> None:
    """A run continued as new while a person is asked asks afresh: the old request is
    withdrawn when answered, saying so, and the new run's request takes the answer."""
    workflow = ContinueWhileAsking
    async with running(world.worker(workflow), world.notifier(handler=world.desk_handler)):
        handle = await world.start(workflow, False)
        [first] = await asking(world, handle, 1)
        await handle.signal(workflow.next)
        continued = await world.created.next()
        late = await world.answer(first, "alice", {"answer": "Hotel H"})
        answered = await world.answer(continued, "alice", {"answer": "Hotel I"})
        result = await world.client.get_workflow_handle(handle.id).result()
    assert (late.status_code, late.json()) == (409, {"detail": f"Withdrawn: {CONTINUED}"})
    assert await withdrawn_for(world, first) == ended(CONTINUED)
    assert (answered.status_code, result) == (200, {"answer": "Hotel I"})


@SQLITE_ONLY
async def test_a_retry_withdraws_the_question_its_failed_run_left_open(world: World) -> None:
    """One pause, one open question: the retry's ask withdraws the failed run's open one,
    saying how that run ended, with no answer and no run check needed."""
    async with running(world.worker(AskThenFail), world.notifier()):
        handle = await world.start(AskThenFail, retry_policy=RetryPolicy(maximum_attempts=2))
        [first] = await asking(world, handle, 1)
        await handle.signal(AskThenFail.fail)
        retried = await world.created.next()
        pending = [request.pending_id for request in await world.desk_handler.list_pending()]
        answered = await world.answer(retried, "alice", {"answer": "Hotel I"})
        result = await handle.result()
    assert pending == [retried]
    assert await withdrawn_for(world, first) == ended(FAILED)
    assert (answered.status_code, result) == (200, {"answer": "Hotel I"})


class ReadsKept(SQLiteStore):
    """A SQLite store that keeps the id of every request its reads of many return."""

    def __init__(self, path: str) -> None:
        super().__init__(path, backstop_interval=0.02)
        self.read: list[str] = []

    async def list_pending(self, **filters: Unpack[PendingFilters]) -> list[PendingInput]:
        found = await super().list_pending(**filters)
        self.read.extend(request.pending_id for request in found)
        return found

    async def fetch_many(self, pending_ids: Collection[str]) -> list[PendingInput]:
        found = await super().fetch_many(pending_ids)
        self.read.extend(request.pending_id for request in found)
        return found


async def _beside_others(world: World) -> tuple[HumanInputHandler, ReadsKept, set[str]]:
    """A handler on the world's store that keeps what it reads, and the ids of three open
    requests of other workflows made on it."""
    store = ReadsKept(world.store_url.removeprefix("sqlite:///"))
    world.stores.append(store)
    handler = HumanInputHandler(store=store)
    others = {
        (
            await handler.create_detached(
                "choose",
                {"question": "Which hotel?"},
                room_id="room",
                channel_id="temporal",
                tool_call_id=f"temporal:1:run-{number}:other-{number}",
                actor_id="alice",
            )
        ).pending_id
        for number in range(3)
    }
    assert {await world.created.next() for _ in others} == others
    return handler, store, others


@SQLITE_ONLY
async def test_a_retry_reads_no_other_workflow_s_open_requests(world: World) -> None:
    """The retry's first ask withdraws the failed run's open question by reading that run's
    requests alone: the open requests of other workflows are not read, however many."""
    handler, store, others = await _beside_others(world)
    async with running(world.worker(AskThenFail, handler=handler)):
        handle = await world.start(AskThenFail, retry_policy=RetryPolicy(maximum_attempts=2))
        [first] = await asking(world, handle, 1)
        await handle.signal(AskThenFail.fail)
        await world.created.next()  # the retry's, made once the failed run's was withdrawn
    assert await withdrawn_for(world, first) == ended(FAILED)
    assert others.isdisjoint(store.read)


@SQLITE_ONLY
async def test_an_answer_to_an_ended_run_reads_no_other_workflow_s_open_requests(
    world: World,
) -> None:
    """The answer check withdraws the terminated run's open requests by reading that run's
    requests alone: the open requests of other workflows are not read."""
    handler, store, others = await _beside_others(world)
    surface = TemporalUpdates(world.client)
    surface.bind_handler(handler)  # as a notifier does, without the notifier's own reads
    try:
        async with running(world.worker(AskAtOnce)):
            handle = await world.start(AskAtOnce, 2)
            ids = await asking(world, handle, 2)
            await handle.terminate("the trip was called off")
            assert not await handler.aresolve(ids[0], "Hotel H", by="alice")
    finally:
        await surface.aclose()
    assert await withdrawn_for(world, ids[1]) == ended(TERMINATED)
    assert others.isdisjoint(store.read)


@SQLITE_ONLY
async def test_a_run_continued_as_new_withdraws_the_question_the_old_run_left_open(
    world: World,
) -> None:
    workflow = ContinueWhileAsking
    async with running(world.worker(workflow)):
        handle = await world.start(workflow, False)
        [first] = await asking(world, handle, 1)
        await handle.signal(workflow.next)
        continued = await world.created.next()
        pending = [request.pending_id for request in await world.desk_handler.list_pending()]
    assert pending == [continued]
    assert await withdrawn_for(world, first) == ended(CONTINUED)


@SQLITE_ONLY
async def test_an_answer_to_a_failed_run_reaching_its_retry_mid_create_is_refused(
    world: World,
) -> None:
    """An answer given where no one checks the run (the CLI, another process) reaches the
    retry while its first ask is being made: refused, saying the run ended, never taken and
    then dropped; the retry's own question takes the next answer."""
    async with running(world.worker(AskThenFail, max_cached_workflows=0)):
        handle = await world.start(AskThenFail, retry_policy=RetryPolicy(maximum_attempts=2))
        [first] = await asking(world, handle, 1)
    # Workflows only: the retry's create stays scheduled until an activity worker comes.
    workflows_only = Worker(world.client, task_queue=world.task_queue, workflows=[AskThenFail])
    async with running(notifier := world.notifier()):
        async with running(workflows_only):
            await handle.signal(AskThenFail.fail)
            retry = await _retry_of(world, handle)
            await wait_for_event(retry, _scheduled)
            assert await world.worker_handler.aresolve(first, "Hotel H", by="alice")
            await notifier.wait_idle()
        [delivered] = [
            e for e in await world.desk_handler.history(first) if e["type"] == "delivered"
        ]
        async with running(world.worker(AskThenFail)):
            retried = await world.created.next()
            answered = await world.answer(retried, "alice", {"answer": "Hotel I"})
            result = await handle.result()
    assert (delivered["accepted"], delivered["refused"]) == (
        False,
        "the workflow ended (failed) before it took the answer",
    )
    assert (answered.status_code, result) == (200, {"answer": "Hotel I"})


async def _retry_of(world: World, handle: WorkflowHandle) -> WorkflowHandle:
    """The run the failed first run of ``handle``'s workflow was retried as."""
    first = world.client.get_workflow_handle(handle.id, run_id=handle.result_run_id)
    async for event in first.fetch_history_events(wait_new_event=True):
        if event.HasField("workflow_execution_failed_event_attributes"):
            run_id = event.workflow_execution_failed_event_attributes.new_execution_run_id
            return world.client.get_workflow_handle(handle.id, run_id=run_id)
    raise AssertionError(f"workflow {handle.id} was not retried")


def _scheduled(event: HistoryEvent) -> bool:
    return event.HasField("activity_task_scheduled_event_attributes")

"""An outcome whose run has ended: what the delivery records when the run's history cannot be
read for now, when the run was terminated, and when it was cancelled before it took the
answer."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity, worker
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import (
    Client,
    FetchWorkflowHistoryEventsInput,
    Interceptor,
    OutboundInterceptor,
    WorkflowFailureError,
)
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError, RPCStatusCode
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import updates_taken, wait_for_event, waiting
from tests.adapters.temporal.workflows import Ask

from roomkit.adapters.temporal import TemporalUpdates, update_id_of
from roomkit.adapters.temporal._protocol import WITHDRAW_ACTIVITY
from roomkit.notify import DeliveryError, Notice

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


def delivered(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in history if entry["type"] == "delivered"]


class HistoryFailsOnce(Interceptor):
    """The first read of a workflow's history fails as Temporal's client fails a call once
    its own retries give up on an unreachable server (the SDK's own interceptors)."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _HistoryFailsOnce(next)


class _HistoryFailsOnce(OutboundInterceptor):
    failed = False

    def fetch_workflow_history_events(self, input: FetchWorkflowHistoryEventsInput) -> Any:
        if not self.failed:
            self.failed = True
            return _Unreachable()
        return super().fetch_workflow_history_events(input)


class _Unreachable:
    def __aiter__(self) -> _Unreachable:
        return self

    async def __anext__(self) -> HistoryEvent:
        raise RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b"")


async def notice_of(world: World, pending_id: str) -> Notice:
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    return Notice("question_settled", f"{pending_id}.settle.temporal.-", request)


@SQLITE_ONLY
async def test_an_ended_runs_history_that_cannot_be_read_for_now_is_retried(
    world: World,
) -> None:
    """The workflow took the outcome by its own timer and ended; Temporal went away as the
    surface read its history: the delivery is retried, and then recorded as taken."""
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, {"timeout": 1, "grace": 0.1})
        pending_id = await world.created.next()
        result = await handle.result()
    client = await Client.connect(world.server.address, interceptors=[HistoryFailsOnce()])
    surface = TemporalUpdates(client)
    surface.bind_handler(world.desk_handler)
    notice = await notice_of(world, pending_id)
    with pytest.raises(DeliveryError, match="Temporal is unreachable") as unreachable:
        await surface.send(notice)
    receipt = await surface.send(notice)
    assert result["error"] == "HumanInputTimeoutError"
    assert unreachable.value.retry
    assert receipt == {"update_id": update_id_of(pending_id), "workflow_id": handle.id}
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e.get("taken_by"), e.get("refused")) for e in entries] == [
        (True, "timer", None)
    ]


class WithdrawHeld(worker.Interceptor):
    """Holds the withdraw activity until ``release`` is set; ``entered`` is set as it
    starts (the workflow has seen its cancel, and still runs)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    def intercept_activity(
        self, next: worker.ActivityInboundInterceptor
    ) -> worker.ActivityInboundInterceptor:
        return _Held(next, self)


class _Held(worker.ActivityInboundInterceptor):
    def __init__(self, next: worker.ActivityInboundInterceptor, held: WithdrawHeld) -> None:
        super().__init__(next)
        self.held = held

    async def execute_activity(self, input: worker.ExecuteActivityInput) -> Any:
        if activity.info().activity_type == WITHDRAW_ACTIVITY:
            self.held.entered.set()
            await self.held.release.wait()
        return await super().execute_activity(input)


@SQLITE_ONLY
async def test_an_answer_to_a_workflow_cancelled_before_it_took_it_is_recorded_as_refused(
    world: World,
) -> None:
    """The cancel and the answer both came while no worker ran; the workflow saw the cancel
    first, and its update comes as it withdraws: the workflow ends cancelled, and the
    delivery's history entry says the answer was refused, and why."""
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
    await handle.cancel()
    answered = await world.answer(pending_id, "alice", {"answer": "Hotel H"})
    held = WithdrawHeld()
    async with running(world.worker(Ask, interceptors=[held])):
        await held.entered.wait()
        async with running(notifier := world.notifier()):
            await notifier.wait_idle()
        held.release.set()
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    assert answered.status_code == 200, answered.text
    assert isinstance(failed.value.cause, CancelledError)
    assert await updates_taken(handle) == []
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e.get("taken_by")) for e in entries] == [(False, None)]
    assert entries[0]["refused"].endswith("the workflow was cancelled before it took the answer")


@SQLITE_ONLY
async def test_an_answer_to_a_terminated_or_timed_out_workflow_says_how_it_ended(
    world: World,
) -> None:
    """Neither run took its answer: each delivery is refused, saying how the run ended."""
    async with running(world.worker(Ask), notifier := world.notifier()):
        terminated = await world.start(Ask, {})
        first = await world.created.next()
        timed_out = await world.client.start_workflow(
            Ask,
            {},
            id=f"wf-{uuid.uuid4().hex[:8]}",
            task_queue=world.task_queue,
            execution_timeout=timedelta(seconds=2),
        )
        second = await world.created.next()
        await wait_for_event(terminated, waiting)
        await terminated.terminate("the trip was called off")
        with pytest.raises(WorkflowFailureError):
            await timed_out.result()
        for pending_id in (first, second):
            answered = await world.answer(pending_id, "alice", {"answer": "too late"})
            assert answered.status_code == 200, answered.text
        await notifier.wait_idle()
    refusals = {
        pending_id: [
            (e["accepted"], e.get("refused"))
            for e in delivered(await world.desk_handler.history(pending_id))
        ]
        for pending_id in (first, second)
    }
    assert refusals == {
        first: [(False, "the workflow ended (terminated) before it took the answer")],
        second: [(False, "the workflow ended (timed out) before it took the answer")],
    }

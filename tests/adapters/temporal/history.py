"""Reading a workflow's Temporal history in the tests: waiting (on the server's long poll,
not a sleep) for an event, a workflow's result unless a workflow task of it fails,
counting the updates a workflow took, and the timeouts its activities were scheduled with."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle


async def wait_for_event(handle: WorkflowHandle, wanted: Callable[[HistoryEvent], bool]) -> None:
    """Return once the workflow's history holds an event ``wanted`` accepts."""
    async for event in handle.fetch_history_events(wait_new_event=True):
        if wanted(event):
            return
    raise AssertionError(f"workflow {handle.id} closed without the event awaited")


def waiting(event: HistoryEvent) -> bool:
    """The workflow's timer started: its ask is created and it waits for the outcome (the
    workflow task that took the create's result is complete)."""
    return event.HasField("timer_started_event_attributes")


async def updates_taken(handle: WorkflowHandle) -> list[str]:
    """The ids of the updates the workflow accepted, in order."""
    taken: list[str] = []
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            accepted = event.workflow_execution_update_accepted_event_attributes
            taken.append(accepted.accepted_request.meta.update_id)
    return taken


async def scheduled_timeouts(handle: WorkflowHandle, activity: str) -> list[tuple[float, float]]:
    """The start-to-close and heartbeat timeouts, in seconds, each scheduling of
    ``activity`` in the workflow's history carries."""
    timeouts: list[tuple[float, float]] = []
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == activity:
                timeouts.append(
                    (
                        scheduled.start_to_close_timeout.ToTimedelta().total_seconds(),
                        scheduled.heartbeat_timeout.ToTimedelta().total_seconds(),
                    )
                )
    return timeouts


async def result_or_task_failure(handle: WorkflowHandle) -> Any:
    """The workflow's result; an ``AssertionError`` with the failure once a workflow task of
    it fails instead (Temporal retries the task for ever: the result would never come)."""
    result = asyncio.ensure_future(handle.result())
    failed = asyncio.ensure_future(_task_failure(handle))
    try:
        await asyncio.wait({result, failed}, return_when=asyncio.FIRST_COMPLETED)
        if result.done():
            return result.result()
        raise AssertionError(f"a workflow task of {handle.id} failed: {failed.result()}")
    finally:
        for task in (result, failed):
            task.cancel()
        await asyncio.gather(result, failed, return_exceptions=True)


async def _task_failure(handle: WorkflowHandle) -> str:
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.HasField("workflow_task_failed_event_attributes"):
            return str(event.workflow_task_failed_event_attributes.failure.message)
    await asyncio.Event().wait()  # closed without one: the result comes
    raise AssertionError("unreachable")

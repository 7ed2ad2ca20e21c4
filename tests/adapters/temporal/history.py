"""Reading a workflow's Temporal history in the tests: waiting (on the server's long poll,
not a sleep) for an event, and counting the updates a workflow took."""

from __future__ import annotations

from collections.abc import Callable

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

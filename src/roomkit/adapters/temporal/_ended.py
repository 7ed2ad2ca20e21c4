"""What the history of a workflow run that has ended says about one outcome.

An outcome's update can find the run that asked already ended, and still the run may have
taken the outcome: by this very update, before it ended (a delivery repeated after the
workflow returned), or by reading it from the store itself. Its own timer fired and the
expire activity returned it, or the create activity re-attached the ask to a request already
settled; the workflow then ended before the update came. The run's history tells which: an
accepted update with the outcome's id, or one of roomkit's activities completing with this
request's outcome, followed by a workflow task that completed (the workflow code read it).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from roomkit.adapters.temporal._protocol import CREATE_ACTIVITY, EXPIRE_ACTIVITY, Origin

__all__ = ["BY_UPDATE", "taken_by"]

BY_UPDATE = "update"
"""The run took the outcome's update."""

_READERS = {EXPIRE_ACTIVITY: "timer", CREATE_ACTIVITY: "create"}
"""roomkit's activities that return an outcome, by what took it when one did: the workflow's
timer (the expire activity), or the ask's create activity (a request already settled)."""


async def taken_by(
    client: Client, origin: Origin, update_id: str, outcome: dict[str, Any]
) -> str | None:
    """How the ended run ``origin`` took ``outcome`` (whose update is ``update_id``):
    :data:`BY_UPDATE`, ``"timer"``, ``"create"``; ``None`` when its history says it did not,
    or Temporal keeps no such run.

    Raises:
        RPCError: the history cannot be read for now (Temporal unreachable, the client's
            retries given up): nothing is known of what the run took.
    """
    handle = client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
    reading: dict[int, str] = {}  # the scheduled event of each of roomkit's activities
    read: str | None = None  # an activity returned the outcome; the workflow may not have run
    try:
        async for event in handle.fetch_history_events():
            if event.HasField("workflow_execution_update_accepted_event_attributes"):
                accepted = event.workflow_execution_update_accepted_event_attributes
                if accepted.accepted_request.meta.update_id == update_id:
                    return BY_UPDATE
            elif event.HasField("activity_task_scheduled_event_attributes"):
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                if name in _READERS:
                    reading[event.event_id] = _READERS[name]
            elif event.HasField("activity_task_completed_event_attributes"):
                completed = event.activity_task_completed_event_attributes
                reader = reading.get(completed.scheduled_event_id)
                if reader is not None and read is None:
                    result = await _decoded(client, list(completed.result.payloads))
                    if _same(result, outcome):
                        read = reader
            elif read is not None and event.HasField("workflow_task_completed_event_attributes"):
                return read
    except RPCError as error:
        if error.status is not RPCStatusCode.NOT_FOUND:
            raise  # not an answer: the delivery is tried again, not refused on a guess
        return None
    return None


async def _decoded(client: Client, payloads: list[Any]) -> Any:
    """An activity's result as the client's data converter reads it; ``None`` if it cannot."""
    if len(payloads) != 1:
        return None
    try:
        [value] = await client.data_converter.decode(payloads, [dict])
    except Exception:
        return None
    return value


def _same(result: Any, outcome: dict[str, Any]) -> bool:
    """Whether an activity's ``result`` is ``outcome``: the same request, settled the same way
    (a request settles once, so any read of it settled gives the one outcome)."""
    return (
        isinstance(result, dict)
        and result.get("pending_id") == outcome["pending_id"]
        and result.get("status") == outcome["status"]
    )

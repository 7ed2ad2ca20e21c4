"""How an A2A task ends when the request it waits on ends without an answer.

A request that timed out ends its task ``failed``, one that was withdrawn ``canceled``, each
with roomkit's text; an answered or refused one does not end it (the turn goes on). The
executor applies this when the caller's follow-up finds the request ended; the push surface
when the request ends, for the tasks whose ``input-required`` message named it.
"""

from __future__ import annotations

from a2a.helpers.proto_helpers import get_data_parts, new_text_part
from a2a.server.tasks import TaskUpdater
from a2a.types import Task, TaskState

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools import texts
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["asked", "end_task", "ending"]


def ending(request: PendingInput, waited: float | None) -> tuple[TaskState, str] | None:
    """The state and text a task waiting on ``request`` ends with, or ``None`` when the
    request's end does not end the task.

    Args:
        request: the request, settled.
        waited: the seconds between its creation and its deadline, when known.
    """
    if request.status is PendingInputStatus.TIMED_OUT:
        name = request.tool_name
        if waited is None:
            return TaskState.TASK_STATE_FAILED, texts.error_body(
                f"Human input timed out for tool '{name}'"
            )
        return TaskState.TASK_STATE_FAILED, texts.human_input_timed_out(name, round(waited))
    if request.withdrawn:
        return TaskState.TASK_STATE_CANCELED, f"Withdrawn: request {request.pending_id}"
    return None


async def end_task(handler: HumanInputHandler, request: PendingInput, updater: TaskUpdater) -> bool:
    """End the task ``updater`` updates when ``request`` (of ``handler``) timed out or was
    withdrawn; whether it did (an answered or refused request does not end it)."""
    waited = None
    if handler.durable and request.deadline is not None:
        # A durable store's deadline is on the epoch clock, as the creation time.
        waited = request.deadline - request.created_at.timestamp()
    ends = ending(request, waited)
    if ends is None:
        return False
    state, said = ends
    message = updater.new_agent_message([new_text_part(said)])
    if state == TaskState.TASK_STATE_FAILED:
        await updater.failed(message)
    else:
        await updater.cancel(message)
    return True


def asked(task: Task) -> list[str]:
    """The ids of the requests the task's current status message names in its data parts:
    those its ``input-required`` message asks, or the one whose timeout or withdrawal
    ended it."""
    if not task.status.HasField("message"):
        return []
    data = get_data_parts(list(task.status.message.parts))
    return [str(d["pending_id"]) for d in data if isinstance(d, dict) and "pending_id" in d]

"""Stateless front ends: one conversation workflow per room, found again by its id.

An HTTP endpoint (the desk, an AG-UI or chat endpoint) that hands each message of a room to
a long-running conversation workflow needs no workflow id held between requests:
:func:`send_to_room` starts the room's workflow, or reaches the one running, with
update-with-start on the deterministic id :func:`room_workflow_id` gives, and returns the
update's result.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from roomkit._extras import requires_extra
from roomkit.models.shown import shown
from roomkit.tools.human_input.checks import check_text

with requires_extra("roomkit.adapters.temporal", "temporal"):
    from temporalio.client import Client, WithStartWorkflowOperation
    from temporalio.common import WorkflowIDConflictPolicy

__all__ = ["MAX_WORKFLOW_ID_BYTES", "room_workflow_id", "send_to_room"]

MAX_WORKFLOW_ID_BYTES = 1_000
"""The longest workflow id, in bytes of UTF-8, a Temporal server takes (its default
``limit.maxIDLength``): a longer one is refused by the server at every message."""


def room_workflow_id(room_id: str, *, prefix: str = "room-") -> str:
    """The id of the conversation workflow of ``room_id``.

    Raises:
        ValueError: ``room_id`` is not a non-empty ``str``.
        TypeError: ``prefix`` is not a ``str``.
        InvalidTextError: ``room_id`` or ``prefix`` holds what UTF-8 cannot encode (a lone
            surrogate), which no workflow id can.
        ValueError: the id made is over :data:`MAX_WORKFLOW_ID_BYTES` bytes as UTF-8.
    """
    if not isinstance(room_id, str) or not room_id:
        raise ValueError(f"room_workflow_id() takes a room id, got {shown(room_id)}")
    if not isinstance(prefix, str):
        raise TypeError(f"room_workflow_id() takes a prefix as text, got {shown(prefix)}")
    workflow_id = f"{prefix}{room_id}"
    if not workflow_id.isascii():
        check_text("room_id", room_id)
        check_text("prefix", prefix)
    size = len(workflow_id.encode())
    if size > MAX_WORKFLOW_ID_BYTES:
        # Refused here, naming the room: the server's refusal names neither it nor the fix.
        raise ValueError(
            f"room_workflow_id(): the workflow id of room {shown(room_id)} is {size:,} bytes "
            f"as UTF-8, over the {MAX_WORKFLOW_ID_BYTES:,} a Temporal server takes: pass a "
            "shorter room id or prefix"
        )
    return workflow_id


async def send_to_room(
    client: Client,
    workflow: Callable[..., Any] | str,
    update: Callable[..., Any] | str,
    message: Any,
    *,
    room_id: str,
    task_queue: str,
    start_args: tuple[Any, ...] = (),
    prefix: str = "room-",
    rpc_timeout: timedelta | None = None,
    update_id: str | None = None,
) -> Any:
    """Hand ``message`` to the room's workflow through ``update``; the update's result.

    Starts the workflow (``workflow(*start_args)`` on ``task_queue``) when none runs under
    the room's id, else updates the running one (``USE_EXISTING``), in one call.

    Args:
        workflow: the workflow's run method (``Conversation.run``) or its name.
        update: the update handler (``Conversation.message``) or its name.
        message: the update's argument.
        room_id: the room; the workflow id is :func:`room_workflow_id` of it.
        update_id: the update's id, say the message's own: a message sent again under it
            (a call that timed out, retried) reaches the first update and gets its result,
            so the workflow takes it once. A new id for each call when ``None``.

    Raises:
        ValueError: ``update_id`` is not a non-empty ``str`` (or ``None``).
    """
    if update_id is not None and (not isinstance(update_id, str) or not update_id):
        raise ValueError(
            f"send_to_room(): update_id is a non-empty str or None, got {shown(update_id)}"
        )
    start = WithStartWorkflowOperation(
        workflow,
        args=list(start_args),
        id=room_workflow_id(room_id, prefix=prefix),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    return await client.execute_update_with_start_workflow(
        update,  # type: ignore[arg-type]
        message,
        start_workflow_operation=start,
        id=update_id,
        rpc_timeout=rpc_timeout,
    )

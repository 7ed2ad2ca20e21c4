"""The task store the SDK's request handler is given: a cancel the SDK only writes down is
carried out too.

The SDK hands a cancel to the executor only while the task is active in this process. A task
no process holds (the server restarted while it was ``input-required``, another replica
serves it, or the SDK's ``interrupted_task_timeout`` released it) is cancelled by a write
to the task store alone: the state becomes ``canceled``, the status message stays the
question it asked, and nothing tells the executor. Its requests would stay open, and an
answer given on the desk afterwards would carry its turn on, for a task its caller
cancelled.

:class:`CancellingTasks` sees that write (a task moved to ``canceled`` from a state that is
not final, still carrying the status message it was stored with: a cancel with no word of the
executor's) and carries it out as the executor's ``cancel`` does, before the task is stored:
the task's own turn is stopped when it runs here, the open requests it alone asked are
withdrawn, and the status message says which were withdrawn and which left open. Every
other write goes through unchanged. :class:`CancellingVersionedTasks` does the same for the
SDK's ``VersionedTaskStore`` (the store a cluster of replicas shares), whose cancel is a
versioned write with its status event: the event's message is the task's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import overload

from a2a.helpers.proto_helpers import new_message, new_text_part
from a2a.server.cluster import StoredTask, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.tasks import TaskStore
from a2a.types import (
    ListTasksRequest,
    ListTasksResponse,
    Role,
    Task,
    TaskState,
    TaskStatusUpdateEvent,
)

__all__ = ["CancellingTasks", "CancellingVersionedTasks", "Cancels", "cancelling"]

Cancels = Callable[[ServerCallContext, str, str], Awaitable[str]]
"""``async (context, context_id, task_id) -> text``: carry out the cancel of a task, and
say what it did (the executor's own cancel, without its event queue)."""

_FINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


class _Passing:
    """What a cancelling store passes to the store it wraps unchanged: listing, deleting."""

    def __init__(self, inner: TaskStore | VersionedTaskStore, cancels: Cancels) -> None:
        self.inner = inner
        """The store the tasks are kept in."""
        self._cancels = cancels

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The caller's tasks that ``params`` ask for."""
        return await self.inner.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Delete the task ``task_id``."""
        await self.inner.delete(task_id, context)


class CancellingTasks(_Passing, TaskStore):
    """``inner``, carrying out (``cancels``) a cancel the SDK wrote without the executor.

    Args:
        inner: the store the tasks are kept in.
        cancels: what carries a cancel out (:meth:`RoomKitExecutor.task_store` gives it).
    """

    inner: TaskStore

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Store ``task``; when the write is a cancel the executor was not told of, carry it
        out first and put what it did in the task's status message."""
        await _carry_out(self._cancels, task, await self.inner.get(task.id, context), context)
        await self.inner.save(task, context)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task ``task_id``, when the caller may read it."""
        return await self.inner.get(task_id, context)


class CancellingVersionedTasks(_Passing, VersionedTaskStore):
    """``inner``, a versioned store, carrying out (``cancels``) a cancel the SDK wrote
    without the executor.

    Args:
        inner: the store the tasks are kept in.
        cancels: what carries a cancel out (:meth:`RoomKitExecutor.task_store` gives it).
    """

    inner: VersionedTaskStore

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        """Store ``task`` as ``inner`` does; when the write is a cancel the executor was not
        told of, carry it out first and put what it did in the task's status message, and
        in its status event's.

        Raises:
            ConcurrentTaskModificationError: as ``inner`` raises it (``prev_version`` is
                stale).
        """
        stored = await self.inner.get(task.id, context)
        carried = await _carry_out(self._cancels, task, stored.task if stored else None, context)
        if carried and isinstance(event, TaskStatusUpdateEvent):
            event.status.message.CopyFrom(task.status.message)
        return await self.inner.save(
            task, event=event, prev=prev, prev_version=prev_version, context=context
        )

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task ``task_id`` with its version, when the caller may read it."""
        return await self.inner.get(task_id, context)


async def _carry_out(
    cancels: Cancels, task: Task, stored: Task | None, context: ServerCallContext
) -> bool:
    """Whether writing ``task`` over ``stored`` is a cancel the executor was not told of
    (moved to ``canceled`` from a state that is not final, with the status message it was
    stored with); if so, carry it out and put what it did in the task's status message."""
    if (
        task.status.state != TaskState.TASK_STATE_CANCELED
        or stored is None
        or stored.status.state in _FINAL
        or stored.status.message != task.status.message
    ):
        return False
    said = await cancels(context, task.context_id, task.id)
    message = new_message([new_text_part(said)], task.context_id, task.id, role=Role.ROLE_AGENT)
    task.status.message.CopyFrom(message)
    return True


@overload
def cancelling(tasks: TaskStore, cancels: Cancels) -> TaskStore: ...
@overload
def cancelling(tasks: VersionedTaskStore, cancels: Cancels) -> VersionedTaskStore: ...
def cancelling(
    tasks: TaskStore | VersionedTaskStore, cancels: Cancels
) -> TaskStore | VersionedTaskStore:
    """``tasks`` carrying out (``cancels``) the cancels the SDK writes without the executor.

    Raises:
        TypeError: ``tasks`` is neither a ``TaskStore`` nor a ``VersionedTaskStore``.
    """
    if isinstance(tasks, VersionedTaskStore):
        return CancellingVersionedTasks(tasks, cancels)
    if isinstance(tasks, TaskStore):
        return CancellingTasks(tasks, cancels)
    raise TypeError(
        f"tasks must be an a2a TaskStore or VersionedTaskStore, got {type(tasks).__name__}"
    )

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
other write goes through unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from a2a.helpers.proto_helpers import new_message, new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Role, Task, TaskState

__all__ = ["CancellingTasks", "Cancels"]

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


class CancellingTasks(TaskStore):
    """``inner``, carrying out (``cancels``) a cancel the SDK wrote without the executor.

    Args:
        inner: the store the tasks are kept in.
        cancels: what carries a cancel out (:meth:`RoomKitExecutor.task_store` gives it).
    """

    def __init__(self, inner: TaskStore, cancels: Cancels) -> None:
        self.inner = inner
        """The store the tasks are kept in."""
        self._cancels = cancels

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Store ``task``; when the write is a cancel the executor was not told of, carry it
        out first and put what it did in the task's status message."""
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            stored = await self.inner.get(task.id, context)
            if (
                stored is not None
                and stored.status.state not in _FINAL
                and stored.status.message == task.status.message
            ):
                said = await self._cancels(context, task.context_id, task.id)
                message = new_message(
                    [new_text_part(said)], task.context_id, task.id, role=Role.ROLE_AGENT
                )
                task.status.message.CopyFrom(message)
        await self.inner.save(task, context)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task ``task_id``, when the caller may read it."""
        return await self.inner.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The caller's tasks that ``params`` ask for."""
        return await self.inner.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Delete the task ``task_id``."""
        await self.inner.delete(task_id, context)

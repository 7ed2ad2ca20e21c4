"""A message sent again: the task its first sending started, never a second one.

A caller whose reply was lost sends the same message again, under the same ``messageId``
(the id its sender makes for each message). The SDK gives every message that names no task
a task of its own, and so a turn of its own: the model runs again and the person is asked
again. :class:`RetriedMessages`, the request handler's context builder, gives such a message
ids derived from the caller, the context and the ``messageId``: sent again, the message
names the task its first sending started (and, when it names no context, the same context).
Another caller's equal ``messageId`` derives other ids, and the SDK's task store shows each
caller only their own tasks. The ids need no record: a retry finds its task for as long as
the task store keeps it, across restarts and replicas when that store is durable.

The executor takes a message its task already holds (a user message of the task's history
with the same ``messageId``) as sent again (:func:`sent_before`): it settles and starts
nothing, and the reply is the task as it stands.

A follow-up that reaches a task while the task still works (its turn runs, nothing asked
yet) waits in the SDK until the task holds or ends, and by then the task may ask a question
its sender never saw. The builder notes, as the message arrives, that it came while the
task worked (:func:`sent_working`): its text answers no question.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from a2a.server.agent_execution import RequestContext, SimpleRequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.types import Role, SendMessageRequest, Task

__all__ = ["RetriedMessages", "sent_before", "sent_working"]

_IDS = uuid.UUID("5d0c1b7e-3f0a-4a52-9a59-2f4f0c6e8a11")
"""The namespace of the derived ids (UUIDv5)."""
_SENT_WORKING = "roomkit.a2a.sent_working"
"""The call context's state key noting a message that reached its task while it worked."""


class RetriedMessages(SimpleRequestContextBuilder):
    """The SDK's context builder, whose new task and context ids derive from the caller,
    the context and the message's ``messageId``: a message sent again names the task its
    first sending started; a follow-up reaching a task that ``working`` says still works
    is noted so (:func:`sent_working`)."""

    def __init__(self, working: Callable[[str], bool] = lambda task_id: False) -> None:
        super().__init__()
        self._working = working

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        """The request's context, its ids derived when the message names no task."""
        if params is not None and not task_id and params.message.message_id:
            caller = context.user.user_name
            message_id = params.message.message_id
            context_id = context_id or _derived("context", caller, "", message_id)
            task_id = _derived("task", caller, context_id, message_id)
        elif params is not None and task_id and self._working(task_id):
            context.state[_SENT_WORKING] = True
        return await super().build(context, params, task_id, context_id, task)


def sent_before(context: RequestContext) -> bool:
    """Whether the request's message is one its task already holds: sent again."""
    message, task = context.message, context.current_task
    if message is None or task is None or not message.message_id:
        return False
    return any(
        held.role == Role.ROLE_USER and held.message_id == message.message_id
        for held in task.history
    )


def sent_working(context: RequestContext) -> bool:
    """Whether the request's message reached its task while the task still worked, before
    it asked what the task asks now."""
    call = context.call_context
    return call is not None and bool(call.state.get(_SENT_WORKING))


def _derived(kind: str, caller: str, context_id: str, message_id: str) -> str:
    """The id of a ``kind`` (task, context) that message ``message_id`` of ``caller`` in
    ``context_id`` starts."""
    return str(uuid.uuid5(_IDS, json.dumps([kind, caller, context_id, message_id])))

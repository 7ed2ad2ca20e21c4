"""Which A2A tasks showed a request: the ``shown`` entries of its history.

The tasks of a context share its room, and each task shows its caller every open request of
the room it may see. When a task goes to ``input-required`` the executor records, in the
history of each request it shows, a ``shown`` entry naming the task (the request's evidence
record names that task). Those entries decide which tasks a request belongs to: a plain-text
follow-up on a task answers only an open request that task showed, and a cancel withdraws
only what its own task alone showed.
"""

from __future__ import annotations

import logging

from roomkit.core.exceptions import RoomKitError
from roomkit.models.pending_input import PendingInput
from roomkit.stores import new_entry
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["record_shown", "shown_in"]

logger = logging.getLogger("roomkit.adapters.a2a")


async def record_shown(
    handler: HumanInputHandler, request: PendingInput, caller: str, task_id: str
) -> None:
    """Record, once per task, that the task ``task_id`` showed ``request`` to ``caller``.

    A store that cannot record it loses only the mention: the task still asks.
    """
    try:
        if task_id not in await shown_in(handler, request):
            entry = new_entry("shown", actor=caller, surface="a2a", task=task_id)
            await handler.record(request.pending_id, entry)
    except RoomKitError:
        logger.warning("Could not record that A2A task %s showed %s", task_id, request)


async def shown_in(handler: HumanInputHandler, request: PendingInput) -> set[str]:
    """The A2A tasks that showed ``request``, from its history's ``shown`` entries."""
    return {
        str(entry["task"])
        for entry in await handler.history(request.pending_id)
        if entry.get("type") == "shown" and entry.get("surface") == "a2a" and "task" in entry
    }

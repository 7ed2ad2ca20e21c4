"""What an A2A task shows its caller of a request, and which tasks showed it: the ``shown``
entries of its history.

The tasks of a context share its room, and each task shows its caller every open request of
the room it may see. When a task goes to ``input-required`` the executor records, in the
history of each request it shows, a ``shown`` entry naming the task (the request's evidence
record names that task). Those entries decide which tasks a request belongs to: a plain-text
follow-up on a task answers only an open request that task showed, and a cancel withdraws
only what its own task alone showed. A request is shown as its question, a text part, and
a data part the caller's program reads (``pending_id``, ``kind``, ``schema``,
``expires_at``, ``digest``).
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Part

from roomkit.core.exceptions import RoomKitError
from roomkit.models.kinds import request_kind
from roomkit.models.pending_input import PendingInput
from roomkit.stores import new_entry
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["answered_none", "record_shown", "request_parts", "shown_in"]

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


def answered_none(task_id: str, showing: dict[str, set[str]], *, working: bool = False) -> str:
    """What tells the caller their plain text answered nothing: their task shows no open
    request (or showed none yet: the message came while it ``working``), and which open
    requests wait on which tasks."""
    waiting = [f"request {pending_id} ({_showing(tasks)})" for pending_id, tasks in showing.items()]
    why = f"Task {task_id} shows no open request"
    if working:
        why = f"The message reached task {task_id} while it worked, before it asked"
    return f"{why}: the message answered none. Waiting: {', '.join(waiting)}"


def _showing(tasks: set[str]) -> str:
    if not tasks:
        return "no task shows it"
    return ("task " if len(tasks) == 1 else "tasks ") + ", ".join(sorted(tasks))


def request_parts(handler: HumanInputHandler, request: PendingInput) -> list[Part]:
    """A request as the parts of an ``input-required`` message: its question, its data."""
    arguments = request.arguments
    question = arguments.get("question") or arguments.get("action")
    if not isinstance(question, str):
        question = f"{request.tool_name}({json.dumps(arguments, ensure_ascii=False)})"
    left = handler.time_left(request)
    data: dict[str, Any] = {
        "pending_id": request.pending_id,
        "kind": str(request_kind(request)),
        "schema": request.answer_schema,
        "expires_at": None if left is None else _iso_in(left),
        "digest": request.arguments_digest,
    }
    return [new_text_part(question), new_data_part(data)]


def _iso_in(seconds: float) -> str:
    moment = datetime.fromtimestamp(time.time() + seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

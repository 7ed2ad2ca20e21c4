"""What cancelling an A2A task withdraws: the open requests that task asked, and no other.

The cancel stops the task's own turn first; the calls that turn was waiting on are cut, and
their requests withdrawn with them, whoever decides them: no turn waits for their answer
any more. The cancel's message names them among those it withdrew.

The tasks of a context share its room, and each task shows its caller every open request of
the room it may see; the executor records each showing in the request's history (a
``shown`` entry naming the task). A cancel withdraws a request only when the cancelled task
showed it, no other task did, and the caller may decide it. It leaves open a request
another task of the context showed too (that task may still answer it) and one the caller
may not decide (an approval its approvers decide): each waits for its answer or its
deadline.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from roomkit.adapters.a2a._shown import shown_in
from roomkit.auth.access import Access
from roomkit.auth.principal import Principal
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["Cancelled", "cancel_task"]


@dataclass
class Cancelled:
    """What a cancel did with the open requests its task asked."""

    withdrawn: list[str] = field(default_factory=list)
    """The ids of the requests it withdrew."""
    left: list[str] = field(default_factory=list)
    """The requests it left open, each with why."""

    def __str__(self) -> str:
        said = "Cancelled"
        if self.withdrawn:
            said += f"; withdrawn: {', '.join(self.withdrawn)}"
        if self.left:
            said += f"; left open: {'; '.join(self.left)}"
        return said


async def cancel_task(
    handler: HumanInputHandler,
    access: Access,
    caller: Principal | None,
    room_id: str,
    task_id: str,
    stop: Callable[[], Awaitable[None]],
) -> Cancelled:
    """Stop the task ``task_id``'s turn (``stop``), then withdraw the open requests of the
    room that it asked ``caller`` (none without a caller).

    The requests the task asked, and the tasks that showed each, are read once, before the
    stop; one the stop withdrew (its call was cut) is named among the withdrawn ones.
    """
    asked: list[tuple[str, set[str]]] = []
    for listed in await handler.list_pending(room_id=room_id):
        tasks = await shown_in(handler, listed)
        if task_id in tasks:
            asked.append((listed.pending_id, tasks))
    await stop()
    done = Cancelled()
    if caller is None:
        return done
    for pending_id, tasks in asked:
        request = await handler.get_request(pending_id)
        if request is None:
            continue
        if request.status is not PendingInputStatus.PENDING:
            if request.withdrawn:
                done.withdrawn.append(pending_id)
        elif tasks != {task_id}:
            done.left.append(f"{pending_id} (another task of the context shows it)")
        elif not (
            await access.can_see(caller, request) and await access.may_decide(caller, request)
        ):
            why = "only its approvers decide it" if request.kind == "approval" else "not yours"
            done.left.append(f"{pending_id} ({why})")
        elif await handler.arelease(pending_id):
            done.withdrawn.append(pending_id)
    return done

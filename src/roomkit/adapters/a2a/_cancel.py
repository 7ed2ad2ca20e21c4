"""What cancelling an A2A task withdraws: the open requests that task asked, and no other.

The cancel stops the task's own turn first (started here, or re-driven here after a
restart); the calls that turn was waiting on are cut, and their requests withdrawn with them,
whoever decides them: no turn waits for their answer any more. On a durable store a cut call
leaves its request open for a re-attach by key, which the turn, ended for good, never makes:
the cancel withdraws it too (the stop names the calls the turn recorded). So it does for a
turn not running here: one a re-drive still reads from the journal at start-up is ended
there without running; one no re-drive has begun yet here, or that another process
re-drives, is ended in the journal (:func:`end_turns`), so that no ``resume_pending()``
begun later, here or in another process, runs it; the calls its journal records are named.
The cancel's message names them among those it withdrew.

The tasks of a context share its room, and each task shows its caller every open request of
the room it may see; the executor records each showing in the request's history (a
``shown`` entry naming the task). A cancel withdraws a request only when the cancelled task
showed it, no other task did, and the caller may decide it. It leaves open a request
another task of the context showed too (that task may still answer it) and one the caller
may not decide (an approval its approvers decide): each waits for its answer or its
deadline.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field

from roomkit.adapters.a2a._shown import shown_in
from roomkit.auth.access import Access
from roomkit.auth.principal import Principal
from roomkit.core.store import JournalStep, OpenTurn, RoomStore, turn_journal
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.providers.ai.base import AIResponse
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["Cancelled", "calls_in", "cancel_task", "end_turns"]


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
    stop: Callable[[], Awaitable[Collection[str]]],
) -> Cancelled:
    """Stop the task ``task_id``'s turn (``stop``: the ids of the calls the turn it cut
    recorded), then withdraw the open requests of the room that it asked ``caller`` (none
    without a caller).

    The requests the task asked, and the tasks that showed each, are read once, before the
    stop; one the stop withdrew (its call was cut), or left to no call (its call cut on a
    durable store), is named among the withdrawn ones.
    """
    asked: list[tuple[PendingInput, set[str]]] = []
    for listed in await handler.list_pending(room_id=room_id):
        tasks = await shown_in(handler, listed)
        if task_id in tasks:
            asked.append((listed, tasks))
    cut = await stop()
    done = Cancelled()
    if caller is None:
        return done
    for listed, tasks in asked:
        pending_id = listed.pending_id
        request = await handler.get_request(pending_id)
        if request is None:
            continue
        if request.status is not PendingInputStatus.PENDING:
            if request.withdrawn:
                done.withdrawn.append(pending_id)
        elif request.tool_call_id and request.tool_call_id in cut:
            # Its call was cut for good: no turn will wait for its answer.
            if await handler.arelease(pending_id):
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


def calls_in(steps: Sequence[JournalStep]) -> set[str]:
    """The ids of the calls a turn's model responses made, as its journal recorded them."""
    return {
        call.id
        for step in steps
        if step.kind == "response"
        for call in AIResponse.model_validate(step.payload).tool_calls
    }


async def end_turns(store: RoomStore, match: Callable[[OpenTurn], bool]) -> set[str]:
    """End in the room store's journal the open turns ``match`` picks, so that no
    ``resume_pending()``, in this process or another, re-drives them; the ids of the calls
    they recorded (none on a store that keeps no journal).

    Raises:
        StoreUnavailableError: the store cannot be reached (a turn not ended stays open).
    """
    journal = turn_journal(store)
    if journal is None:
        return set()
    calls: set[str] = set()
    for turn in await journal.open_turns():
        if match(turn):
            calls |= calls_in(await journal.steps(turn.turn_id))
            await journal.end_turn(turn.turn_id)
    return calls

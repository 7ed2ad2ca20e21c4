"""``RoomKitExecutor``: a RoomKit agent as an A2A ``AgentExecutor``.

The A2A context id is the room (created on its first task, with the caller on its roster and
the agent attached); a task's first message starts a turn, its text the prompt (one without
text that is not blank is rejected, nothing run or recorded). While the turn runs, the
executor follows the room: the agent's reply completes the task; a request the turn holds on
puts it in ``input-required`` with the question as text and a data part (``pending_id``, ``kind``,
``schema``, ``expires_at``, ``digest``), records in the request's history that the task
showed it to the caller (a ``shown`` entry naming the task), and the executor returns. The
turn waits on in the store. A follow-up message on the task answers the request as the
caller (each data part ``{"pending_id", "answer"}`` the request it names, plain text the
one open request that task showed, never one only another task of the context showed:
:mod:`roomkit.adapters.a2a._shown`), and the executor follows the room again. A request
that timed out or was withdrawn first ends the task ``failed`` or ``canceled`` with
roomkit's text. Cancelling a task stops its own turn (queued or running) and withdraws
only the requests it asked (:mod:`roomkit.adapters.a2a._cancel`). A message its task already
holds (the same ``messageId``: sent again, its reply lost) settles and starts nothing; the
request handler's context builder (:meth:`RoomKitExecutor.request_context_builder`) takes a
first message sent again to the task it started (:mod:`roomkit.adapters.a2a._retries`).

The caller is the user the SDK's call context names: :class:`~roomkit.adapters.a2a.A2AGate`
sets it from a person's desk token.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any, overload

from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_text_parts,
    new_task,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.cluster import VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import TaskState

from roomkit._doors import door_channel, routed_handler
from roomkit.adapters._feed import (
    STRANDED,
    EventKey,
    FeedChannel,
    Owed,
    RoomLocks,
    TurnFailure,
    drained,
    failures_of,
    failures_told,
    held_requests,
    open_room,
    recorded_elsewhere,
    room_id_problem,
    run_turns,
    seen_now,
    turn_owed,
)
from roomkit.adapters.a2a._answers import MISSING, Refused, as_text, first_note, settle
from roomkit.adapters.a2a._cancel import calls_in, cancel_task, end_turns
from roomkit.adapters.a2a._endings import asked, end_task, ending
from roomkit.adapters.a2a._retries import RetriedMessages, sent_before, sent_working
from roomkit.adapters.a2a._shown import answered_none, record_shown, request_parts, shown_in
from roomkit.adapters.a2a._tasks import cancelling
from roomkit.auth.access import Access
from roomkit.auth.principal import Principal
from roomkit.core.failed_turns import MESSAGE_NAME
from roomkit.core.framework import RoomKit
from roomkit.core.store import OpenTurn
from roomkit.models.pending_input import PendingInput
from roomkit.models.room import InboundMessage, RoomEvent, TextContent
from roomkit.models.shown import shown
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["A2AChannel", "RoomKitExecutor"]

logger = logging.getLogger("roomkit.adapters.a2a")

BACKSTOP = 1.0
"""Seconds between two looks at the room when nothing woke the executor (a hint lost)."""
_NOT_YOURS = "No such context: it is another caller's room, or one you may not follow"
_NO_TEXT = (
    "The message holds no text: send the request as a text part that is not blank. Nothing was run"
)
_NO_ANSWER = (
    "The message holds no text, nor a data part naming a request: send the answer as text, or "
    'as a data part {"pending_id": ..., "answer": ...}'
)


class A2AChannel(FeedChannel):
    """The A2A caller as a transport: the agent's replies reach the task being executed."""


class RoomKitExecutor(AgentExecutor):
    """Runs a kit's agent for A2A tasks; a held request puts the task in ``input-required``.

    Args:
        kit: the kit whose agent runs.
        agent: the id of the kit's AI channel, attached to a context's room when it is made.
        handler: whose requests the tasks wait on (the kit's only routed one by default).
        channel_id: the id the caller's messages are recorded under.

    Raises:
        ValueError: ``agent`` is no channel of the kit; no handler, or several; ``channel_id``
            is another kind of channel of the kit.
    """

    def __init__(
        self,
        kit: RoomKit,
        *,
        agent: str,
        handler: HumanInputHandler | None = None,
        channel_id: str = "a2a",
    ) -> None:
        if kit.get_channel(agent) is None:
            raise ValueError(f"No channel {shown(agent)} in the kit: register the agent first")
        if handler is None:
            handler = routed_handler(
                kit, door="RoomKitExecutor()", shows="whose requests the tasks wait on"
            )
        channel = door_channel(kit, channel_id, A2AChannel, door="RoomKitExecutor()")
        self.kit = kit
        self.agent = agent
        self.handler = handler
        self.channel = channel
        self.access = Access.of(kit, handler)
        self._turns: set[asyncio.Task[list[TurnFailure]]] = set()
        self._task_turns: dict[str, asyncio.Task[list[TurnFailure]]] = {}
        # The id of the message each task's turn was started by, once the room has it.
        self._task_messages: dict[str, int] = {}
        self._rooms = RoomLocks()
        # The tasks whose execution runs here and has asked nothing yet.
        self._working: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Start or answer, then follow the room until it holds or rests."""
        task_id = context.task_id or ""
        self._working.add(task_id)
        try:
            await self._execute(context, event_queue)
        finally:
            self._working.discard(task_id)

    async def _execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, room_id = context.task_id or "", context.context_id or ""
        updater = TaskUpdater(event_queue, task_id, room_id)
        user = context.call_context.user
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            submitted = TaskState.TASK_STATE_SUBMITTED
            await event_queue.enqueue_event(new_task(task_id, room_id, submitted, history=history))
        if not user.is_authenticated:
            await updater.failed(_say(updater, "A person's desk token is needed"))
            return
        if sent_before(context):
            # Sent again (its reply lost): nothing is settled or started again; the reply
            # is the task as it stands.
            return
        principal = Principal(actor_id=user.user_name)
        problem = room_id_problem(room_id, what="The contextId")
        if problem is not None:
            await updater.reject(_say(updater, problem))
            return
        if context.current_task is None and not context.get_user_input().strip():
            # The turn's prompt is the message's text: a blank one would run the model on
            # nothing. A follow-up may hold data parts only: they answer requests.
            await updater.reject(_say(updater, _NO_TEXT))
            return
        async with self._rooms(room_id):
            channels = (self.agent, self.channel.channel_id)
            opened = await open_room(
                self.kit, self.access, principal, room_id, channels, self.handler
            )
        if not opened:
            await updater.reject(_say(updater, _NOT_YOURS))
            return
        wake = asyncio.Event()
        replies, stop_listening = self.channel.listen(room_id, wake)
        stop_watching = self.handler.subscribe(lambda change: wake.set())
        try:
            # What the room holds before this task acts: a reply recorded after it and not
            # delivered here came from a turn in another process.
            seen = await seen_now(self.kit, room_id)
            notes: list[str] = []
            if context.current_task is None:
                turn: asyncio.Task[list[TurnFailure]] | None = self._start_turn(
                    principal, room_id, context
                )
            else:
                # The task's turn, waiting on what the follow-up answers: its failure after
                # the answer is the task's.
                turn = self._task_turns.get(updater.task_id)
                ended, notes = await self._answer(principal, room_id, context, updater)
                if ended:
                    return
            await self._follow(room_id, turn, replies, wake, updater, principal, notes, seen)
        finally:
            stop_listening()
            stop_watching()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the task's turn, withdraw the open requests the task asked, and cancel the
        task.

        The task's turn stops as a turn whose caller is cancelled stops: one still queued
        behind another turn of the room never starts; a running one is cut where it is (the
        model's round or the call it waits on is cancelled, the handler's
        ``on_tool_cancelled`` runs, the requests its calls wait on are withdrawn), and no
        later model round or call runs; one ``resume_pending()`` is still reading from the
        journal is ended there without running, and one not running here is ended in the
        room store's journal, so that no ``resume_pending()`` called later, here or in
        another process, runs it. The turns of the context's other tasks go on.

        Then the open requests the task asked are withdrawn: those whose history holds a
        ``shown`` entry naming the task. One another task showed too (the tasks of a
        context share its room), and one the caller may not decide (an approval its
        approvers decide), is left open when another turn waits on it: it waits for its
        answer or its deadline, and the task's message says so.
        """
        room_id, task_id = context.context_id or "", context.task_id or ""
        done = await self._cancelled(context.call_context, room_id, task_id)
        updater = TaskUpdater(event_queue, task_id, room_id)
        await updater.cancel(_say(updater, done))

    @overload
    def task_store(self, tasks: TaskStore) -> TaskStore: ...
    @overload
    def task_store(self, tasks: VersionedTaskStore) -> VersionedTaskStore: ...
    def task_store(self, tasks: TaskStore | VersionedTaskStore) -> TaskStore | VersionedTaskStore:
        """``tasks`` (a ``TaskStore``, or a ``VersionedTaskStore`` replicas share), as the
        SDK's request handler is to be given it: a cancel the SDK only writes there (the
        task is active in no process of its: the server restarted, another replica serves
        it) is carried out as :meth:`cancel` carries one out, before the task is stored
        (:mod:`roomkit.adapters.a2a._tasks`).

        Raises:
            TypeError: ``tasks`` is neither.
        """
        return cancelling(tasks, self._cancelled)

    def request_context_builder(self) -> RetriedMessages:
        """The context builder the SDK's request handler is to be given: a message sent
        again (the same ``messageId`` from the same caller, its reply lost) names the task
        its first sending started instead of starting another
        (:mod:`roomkit.adapters.a2a._retries`)."""
        return RetriedMessages(self._working.__contains__)

    async def _cancelled(self, call: ServerCallContext, room_id: str, task_id: str) -> str:
        """Stop the task's turn and withdraw what it asked; what was done, as text."""
        user = call.user
        caller = Principal(actor_id=user.user_name) if user.is_authenticated else None
        stop = functools.partial(self._stop_turn, room_id, task_id)
        return str(await cancel_task(self.handler, self.access, caller, room_id, task_id, stop))

    async def _stop_turn(self, room_id: str, task_id: str) -> set[str]:
        """Cancel the task's turn, started or re-driven (``resume_pending()``) here, if it
        runs or waits to run, and wait until it let go of the room; the ids of the calls
        it recorded in a durable room store's journal."""
        name = _what(task_id)

        def of_task(turn: OpenTurn) -> bool:
            return (turn.room_id, turn.state.get(MESSAGE_NAME)) == (room_id, name)

        # A turn a re-drive is still reading is cut when that re-drive starts its turns.
        cut = await self.kit.resumed.cut(of_task)
        calls = {call for steps in cut for call in calls_in(steps)}
        turn = self._task_turns.pop(task_id, None)
        if turn is None or turn.done():
            if not cut:
                # Not running here: ended in the journal, so that no re-drive begun later,
                # here or in another process, runs it; its journal names the calls no turn
                # will wait on.
                calls |= await end_turns(self.kit.store, of_task)
                # A re-drive here that read the journal before the end is cut all the same.
                await self.kit.resumed.cut(of_task)
            return calls
        turn.cancel()
        await asyncio.wait({turn})
        message_id = self._task_messages.pop(task_id, None)
        if message_id is not None:
            # Cut on purpose: a durable room store's journal must not keep it owed.
            calls |= await end_turns(
                self.kit.store, lambda open_turn: open_turn.state.get("message_id") == message_id
            )
        return calls

    def _start_turn(
        self, principal: Principal, room_id: str, context: RequestContext
    ) -> asyncio.Task[list[TurnFailure]]:
        text = context.get_user_input()
        inbound = InboundMessage(self.channel.channel_id, principal.actor_id, TextContent(text))
        task_id = context.task_id or ""

        def recorded(event: RoomEvent) -> None:
            self._task_messages[task_id] = event.id

        turn = run_turns(
            self.kit,
            room_id,
            [(inbound, _what(task_id))],
            self._turns,
            agent=self.agent,
            name=f"a2a-turn-{room_id}",
            logger=logger,
            on_recorded=recorded,
        )
        # The task's own turn, so that cancelling the task stops it.
        self._task_turns[task_id] = turn
        turn.add_done_callback(lambda _: self._forget_turn(task_id, turn))
        return turn

    def _forget_turn(self, task_id: str, turn: asyncio.Task[list[TurnFailure]]) -> None:
        if self._task_turns.get(task_id) is turn:
            del self._task_turns[task_id]
            self._task_messages.pop(task_id, None)

    async def _answer(
        self,
        principal: Principal,
        room_id: str,
        context: RequestContext,
        updater: TaskUpdater,
    ) -> tuple[bool, list[str]]:
        """Settle what the follow-up answers, each data part its own request, plain text
        the one open request its task showed: whether the task ended here, and what to
        tell the caller besides the agent's replies (a request settled otherwise first, a
        part that answered nothing)."""
        message = context.message
        parts = list(message.parts) if message is not None else []
        named = [d for d in get_data_parts(parts) if isinstance(d, dict) and "pending_id" in d]
        mine = [
            request
            for request in await self.handler.list_pending(room_id=room_id)
            if await self.access.can_see(principal, request)
        ]
        if named:
            answers = [(d["pending_id"], d.get("answer", MISSING)) for d in named]
        else:
            # Plain text names no request: it answers one this task showed, never one
            # only another task of the context showed.
            showing = {r.pending_id: await shown_in(self.handler, r) for r in mine}
            own = [r for r in mine if updater.task_id in showing[r.pending_id]]
            # Text sent while the task worked was written before any question it asks.
            if not own or sent_working(context):
                return await self._none_open(context, updater, showing)
            if len(own) > 1:
                await self._ask_again(
                    updater,
                    own,
                    'Name the request you answer: a data part {"pending_id": ..., "answer": ...}',
                )
                return True, []
            said = get_text_parts(parts)
            if not said:
                # Data naming no request, or files: nothing the caller wrote is an answer.
                await self._ask_again(updater, own, _NO_ANSWER)
                return True, []
            answers = [(own[0].pending_id, "\n".join(said))]
        # Each part is settled whatever the others hold: one the task cannot take is said
        # beside the others' outcome, and takes none of them back.
        taken, problems, notes = False, [], []
        ended: PendingInput | None = None
        for pending_id, answer in answers:
            outcome = await settle(
                self.handler, self.access, principal, room_id, pending_id, answer
            )
            if isinstance(outcome, Refused):
                problems.append(str(outcome))
                continue
            taken = True
            if outcome is None:
                continue
            if ending(outcome, None) is not None:
                ended = ended or outcome
            elif (note := first_note(outcome, principal, as_text(answer))) is not None:
                notes.append(note)
        if ended is not None and await end_task(self.handler, ended, updater):
            return True, []
        if not taken:
            await self._ask_again(updater, mine, "; ".join(problems))
            return True, []
        return False, problems + notes

    async def _none_open(
        self, context: RequestContext, updater: TaskUpdater, showing: dict[str, set[str]]
    ) -> tuple[bool, list[str]]:
        """Plain text on a task that shows no open request: whether what the task asked
        ended otherwise (timed out, withdrawn) and ended the task here; else the task goes
        on, told that the text answered none and which tasks' requests wait."""
        task = context.current_task
        for pending_id in asked(task) if task is not None else []:
            request = await self.handler.get_request(pending_id)
            if request is not None and await end_task(self.handler, request, updater):
                return True, []
        if not showing:
            return False, []
        return False, [answered_none(updater.task_id, showing, working=sent_working(context))]

    async def _ask_again(
        self, updater: TaskUpdater, open_requests: list[PendingInput], problem: str
    ) -> None:
        parts = [new_text_part(problem)] + [
            p for r in open_requests for p in request_parts(self.handler, r)
        ]
        self._working.discard(updater.task_id)  # asking: an answer may come from now on
        await updater.requires_input(updater.new_agent_message(parts))

    async def _follow(
        self,
        room_id: str,
        turn: asyncio.Task[list[TurnFailure]] | None,
        replies: asyncio.Queue[Any],
        wake: asyncio.Event,
        updater: TaskUpdater,
        caller: Principal,
        notes: list[str],
        seen: set[EventKey],
    ) -> None:
        """Follow the room until the task's turn failed (failed, the message saying it was
        not handled: send it again; here, or in another process as the room store tells
        it), or the room holds on requests (input required) or
        rests (completed), or waits only on turns no process runs (failed, the message
        saying that they go on once the server calls ``resume_pending()``, or to send the
        message again); the task's message says what the agent replied meanwhile, here or,
        after an answer taken here, in another process (read back from the room store)."""
        if turn is not None:
            turn.add_done_callback(lambda _: wake.set())
        said = list(notes)
        clock = asyncio.get_running_loop().time
        started = clock()
        while True:
            wake.clear()
            said += [reply.content.body for reply in drained(replies, seen) if reply.content.body]
            if failures := failures_of([turn] if turn is not None else []):
                said += [str(failure) for failure in failures]
                await updater.failed(updater.new_agent_message([new_text_part(t) for t in said]))
                return
            held = await held_requests(self.handler, room_id, waited=clock() - started)
            resting = held == [] and (turn is None or turn.done()) and replies.empty()
            owed = await turn_owed(self.kit, room_id, self.agent) if resting else None
            if held or owed in (Owed.NONE, Owed.STRANDED):
                own = self.channel.channel_id
                elsewhere = await recorded_elsewhere(self.kit, room_id, seen, own)
                shown, failures = failures_told(elsewhere, what=_what(updater.task_id))
                said += [event.content.body for event in shown if event.content.body]
                if failures:
                    # The task's turn failed in another process: told as it is there.
                    said += [str(failure) for failure in failures]
                    await updater.failed(
                        updater.new_agent_message([new_text_part(t) for t in said])
                    )
                    return
                if owed is Owed.STRANDED:
                    said.append(STRANDED)
                    await updater.failed(
                        updater.new_agent_message([new_text_part(t) for t in said])
                    )
                    return
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), BACKSTOP)
        message = [new_text_part(text) for text in said]
        if held and (held := await self.access.visible(caller, held)):
            for request in held:
                message += request_parts(self.handler, request)
                await record_shown(self.handler, request, caller.actor_id, updater.task_id)
            self._working.discard(updater.task_id)  # asking: an answer may come from now on
            await updater.requires_input(updater.new_agent_message(message))
        else:
            # The room rests, or waits on others' answers: nothing of it is the caller's.
            await updater.complete(updater.new_agent_message(message) if message else None)


def _what(task_id: str) -> str:
    """What the log and the caller's message call the message that started task ``task_id``."""
    return f"A2A message of task {task_id}"


def _say(updater: TaskUpdater, text: str) -> Any:
    return updater.new_agent_message([new_text_part(text)])

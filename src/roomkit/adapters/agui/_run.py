"""One AG-UI run on a thread: resume, new messages, the agent's replies, then an outcome.

A run starts with ``RUN_STARTED`` and ends with exactly one of ``RUN_FINISHED`` (success, or
an interrupt naming every open request of the thread) or ``RUN_ERROR`` (a resume it cannot
take, more new messages than one run may start or one without text, or a turn it follows
that failed, its message then not handled, with a code; a run replaying a resume tells the
failure the run it replays told). In between: the outcomes of the requests settled elsewhere
first that the resume named or whose held call the client holds without a result
(``TOOL_CALL_RESULT``), the agent's replies the client has not seen (``TEXT_MESSAGE_*``), and
the held calls (``TOOL_CALL_START/ARGS/END``) before an interrupt.

The new messages are counted and checked first (:mod:`roomkit.adapters.agui._turns`), then a
resume is read whole before anything is settled: one entry the run cannot take refuses them
all, so an approval a partial resume leaves uncovered never runs. The turns the run starts
keep going after it ends with an interrupt: they wait on the store, and the next run (or the
desk, Slack, a restart's ``resume_pending``) carries them on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
)

from roomkit.adapters._feed import (
    RECENT,
    STRANDED,
    EventKey,
    FeedChannel,
    Owed,
    RoomLocks,
    TurnFailure,
    drained,
    event_key,
    failures_of,
    failures_told,
    held_requests,
    open_room,
    recorded_elsewhere,
    seen_now,
    turn_owed,
)
from roomkit.adapters.agui._events import (
    held_call,
    lacking,
    outcome_of,
    result_of,
    sendable,
    text_events,
    unseen,
)
from roomkit.adapters.agui._interrupts import (
    RunRefused,
    Settle,
    interrupt_of,
    is_replay,
    named,
    settle_of,
)
from roomkit.adapters.agui._turns import MAX_NEW_MESSAGES, check_new_messages, start_turns
from roomkit.auth.access import Access
from roomkit.auth.principal import Principal
from roomkit.core.exceptions import InvalidAnswerError, RoomKitError
from roomkit.core.failed_turns import ends_failed_turn
from roomkit.core.framework import RoomKit
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.room import RoomEvent
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["NOT_YOURS", "AGUIChannel", "Thread", "open_thread", "run_events"]

logger = logging.getLogger("roomkit.adapters.agui")

NOT_YOURS = "No such thread: it is another room's, or not one you may follow"
"""Why a thread is refused to a caller (404 before a run starts, ``unknown_thread`` in it)."""
BACKSTOP = 1.0
"""Seconds between two looks at the thread when nothing woke the run (a hint lost)."""


class AGUIChannel(FeedChannel):
    """The AG-UI front end as a transport: the agent's replies reach the runs streaming."""


@dataclass
class Thread:
    """What every run of the router shares: the kit, its handler, who sees what."""

    kit: RoomKit
    handler: HumanInputHandler
    access: Access
    channel: AGUIChannel
    agent: str
    """The id of the AI channel attached to a thread's room when the room is created."""
    max_new_messages: int = MAX_NEW_MESSAGES
    """The unanswered user messages the thread does not hold yet that one run may start."""
    turns: set[asyncio.Task[Any]] = field(default_factory=set)
    """The tasks this process runs for the router's threads, held until they end."""
    starting: dict[tuple[str, str, str], asyncio.Task[list[TurnFailure]]] = field(
        default_factory=dict
    )
    """The turns a run of this process started, by thread, sender and message id, until they
    end: a second run sending the same message follows that turn instead of running it
    again."""
    admission: RoomLocks = field(default_factory=RoomLocks, repr=False)
    """The lock under which a run opens the thread, tells its new messages and starts them."""


async def run_events(
    thread: Thread, principal: Principal, run: RunAgentInput
) -> AsyncIterator[BaseEvent]:
    """The events of one run, ``RUN_STARTED`` first and one terminal event last (a store
    gone away included: ``RUN_ERROR`` with the code ``run_failed``), each one the stream can
    encode."""
    yield RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id)
    try:
        async for item in _events(thread, principal, run):
            yield sendable(item)
    except Exception as error:
        logger.exception("AG-UI run %s on thread %s failed", run.run_id, run.thread_id)
        message = f"The run failed ({type(error).__name__}): run it again"
        yield RunErrorEvent(message=message, code="run_failed")


async def _events(
    thread: Thread, principal: Principal, run: RunAgentInput
) -> AsyncIterator[BaseEvent]:
    thread_id = run.thread_id
    wake = asyncio.Event()
    replies, stop_listening = thread.channel.listen(thread_id, wake)
    stop_watching = thread.handler.subscribe(lambda change: wake.set())
    try:
        try:
            await check_new_messages(thread, principal, thread_id, run)
            plan = await _planned(thread, principal, thread_id, run.resume or [])
            # Taken: only now is the thread's room made, so a run refused leaves none.
            await open_thread(thread, principal, thread_id)
            # What the thread holds before the resume lets a turn go on, maybe in another
            # process: the end of a failed turn recorded since is the run's to tell.
            before = await seen_now(thread.kit, thread_id)
            settled = await _resume(thread, principal, plan)
        except RunRefused as refused:
            yield RunErrorEvent(message=str(refused), code=refused.code)
            return
        for request in settled + await _settled_unseen(thread, principal, run, settled):
            yield result_of(request)
        try:
            async with thread.admission(thread_id):
                history = await thread.kit.store.recent_events(thread_id, RECENT)
                turns = await start_turns(thread, principal, thread_id, run, history)
        except RunRefused as refused:
            yield RunErrorEvent(message=str(refused), code=refused.code)
            return
        own = (thread.channel.channel_id, principal.actor_id)
        for event in unseen(history, run.messages, own):
            for item in text_events(event):
                yield item
        # A resume replayed (its caller lost the stream of the run it replays) tells what
        # that run told: the end of a failed turn the client lacks is told again.
        lacked = lacking(history, run.messages, own) if settled else []
        seen = _seen(history, before, [e for e in lacked if ends_failed_turn(e)])
        async for item in _follow(thread, principal, run, turns, replies, wake, seen):
            yield item
    finally:
        stop_listening()
        stop_watching()


def _seen(
    history: list[RoomEvent], before: set[EventKey], retold: list[RoomEvent]
) -> set[EventKey]:
    """The events of ``history`` the run holds as told: all but the ends of failed turns
    recorded since ``before`` was read, and those ``retold``."""
    again = {event_key(event) for event in retold}
    return {
        key
        for event in history
        if (key := event_key(event)) not in again and (key in before or not ends_failed_turn(event))
    }


async def open_thread(thread: Thread, principal: Principal, thread_id: str) -> None:
    """Make the thread's room on its first run (the caller on its roster, the agent's and
    the door's channels attached); attach the door's channel to a room made elsewhere.

    Raises:
        RunRefused: the room is one the caller may not follow (``unknown_thread``: made by
            another person since the run was admitted, or holding requests asked elsewhere).
    """
    kit, channel_id = thread.kit, thread.channel.channel_id
    async with thread.admission(thread_id):
        channels = (thread.agent, channel_id)
        if not await open_room(kit, thread.access, principal, thread_id, channels, thread.handler):
            raise RunRefused("unknown_thread", NOT_YOURS)
        bindings = await kit.store.list_bindings(thread_id)
        if channel_id not in {binding.channel_id for binding in bindings}:
            await kit.attach_channel(thread_id, channel_id)


async def _planned(
    thread: Thread, principal: Principal, thread_id: str, entries: list[ResumeEntry]
) -> list[Settle]:
    """What ``entries`` ask, each checked, before anything is settled or the room made.

    Raises:
        RunRefused: one entry the run cannot take: none is settled.
    """
    if not entries:
        return []
    handler = thread.handler
    plan: list[Settle] = []
    for entry in entries:
        if any(settle.request.pending_id == entry.interrupt_id for settle in plan):
            raise RunRefused(
                "duplicate_interrupt", f"Interrupt {named(entry.interrupt_id)} is answered twice"
            )
        request = await handler.get_request(entry.interrupt_id)
        if (
            request is None
            or request.room_id != thread_id
            or not await thread.access.can_see(principal, request)
            or not await thread.access.may_decide(principal, request)
        ):
            raise RunRefused(
                "unknown_interrupt",
                f"Interrupt {named(entry.interrupt_id)} is no open request of this thread of yours",
            )
        settle = settle_of(request, entry)
        if request.status is not PendingInputStatus.PENDING:
            _replayed(settle, request)  # settled otherwise: refused before the room is made
        plan.append(settle)
    covered = {settle.request.pending_id for settle in plan}
    # A resume settling nothing still open is a replay (sent again, its answer lost): the
    # approvals its turn opened since are not its to cover.
    settles = any(settle.request.status is PendingInputStatus.PENDING for settle in plan)
    for request in await handler.list_pending(room_id=thread_id) if settles else []:
        # An approval the caller may not decide is not theirs to cover: it waits for its
        # approvers, whatever this resume says.
        mine = await thread.access.may_decide(principal, request)
        if request.kind == "approval" and mine and request.pending_id not in covered:
            raise RunRefused(
                "uncovered_approval",
                f"The resume leaves approval {request.pending_id} ({request.tool_name}) "
                "unanswered: answer every open approval of the thread at once; nothing "
                "was settled",
            )
    return plan


async def _resume(thread: Thread, principal: Principal, plan: list[Settle]) -> list[PendingInput]:
    """Carry ``plan`` out; the requests settled elsewhere first."""
    elsewhere: list[PendingInput] = []
    for settle in plan:
        now = await _apply(thread.handler, principal, settle)
        if now is not None:
            elsewhere.append(now)
    return elsewhere


async def _settled_unseen(
    thread: Thread, principal: Principal, run: RunAgentInput, told: list[PendingInput]
) -> list[PendingInput]:
    """The caller's requests of the thread settled elsewhere (the desk, Slack, a timeout)
    whose held call the client holds without a result, oldest first: the run shows their
    outcome before anything else, so the client's interrupt for one does not stay open."""
    calls = {
        call.id
        for message in run.messages
        if message.role == "assistant"
        for call in message.tool_calls or ()
    }
    calls -= {message.tool_call_id for message in run.messages if message.role == "tool"}
    calls -= {request.tool_call_id or request.pending_id for request in told}
    if not calls:
        return []
    recent = await thread.handler.list_settled(actor_ids=[principal.actor_id], limit=200)
    in_thread = [request for request in reversed(recent) if request.room_id == run.thread_id]
    return [r for r in in_thread if (r.tool_call_id or r.pending_id) in calls]


async def _apply(
    handler: HumanInputHandler, principal: Principal, settle: Settle
) -> PendingInput | None:
    """Carry ``settle`` out; the request as it stands when it was settled before (a replay).

    Raises:
        RunRefused: the request was settled otherwise, or the answer is refused.
    """
    pending_id, by = settle.request.pending_id, principal.actor_id
    if settle.request.status is not PendingInputStatus.PENDING:
        return _replayed(settle, settle.request)
    try:
        if settle.action == "withdraw":
            won = await handler.arelease(pending_id)
        elif settle.action == "reject":
            digest = settle.request.arguments_digest
            won = await handler.areject(
                pending_id, settle.text, by=by, surface="agui", digest=digest
            )
        else:
            won = await handler.aresolve(
                pending_id,
                settle.text,
                by=by,
                surface="agui",
                digest=settle.request.arguments_digest,
            )
    except InvalidAnswerError as error:
        raise RunRefused("invalid_payload", f"Interrupt {pending_id}: {error}") from None
    except RoomKitError as error:
        raise RunRefused("already_settled", f"Interrupt {pending_id}: {error}") from None
    if won:
        return None
    return _replayed(settle, await handler.get_request(pending_id))


def _replayed(settle: Settle, now: PendingInput | None) -> PendingInput:
    """``now``, when it holds what ``settle`` asks (a replay).

    Raises:
        RunRefused: it was settled otherwise (``already_settled``).
    """
    if now is None or now.status is PendingInputStatus.PENDING or not is_replay(settle, now):
        how = "it is no longer open" if now is None else outcome_of(now)
        raise RunRefused(
            "already_settled",
            f"Interrupt {settle.request.pending_id} was settled otherwise first: {how}",
        )
    return now


async def _follow(
    thread: Thread,
    principal: Principal,
    run: RunAgentInput,
    turns: list[asyncio.Task[list[TurnFailure]]],
    replies: asyncio.Queue[RoomEvent],
    wake: asyncio.Event,
    seen: set[EventKey],
) -> AsyncIterator[BaseEvent]:
    """Stream the replies until a turn the run follows failed (``RUN_ERROR`` with the code
    ``turn_failed``, naming each message to send again; a turn of the caller's that failed
    in another process too, as the room store tells it), or the thread holds on requests
    (interrupt) or rests, or waits only on turns no process runs (``RUN_ERROR`` with the
    code ``turn_not_running``).

    The requests shown are those the caller may see: a thread held only by questions of
    others ends the caller's run (no interrupt it could never answer). ``seen`` holds the
    room's events the run read or sent already, but the end of a failed turn recorded
    since the run began, or told again by a replayed resume; before it ends, the run
    sends the replies the room store holds besides (a turn that ran in another process,
    after an answer taken there), or tells the failure it ended with."""
    thread_id, run_id = run.thread_id, run.run_id
    own = thread.channel.channel_id
    for turn in turns:
        turn.add_done_callback(lambda _: wake.set())
    clock = asyncio.get_running_loop().time
    started = clock()
    while True:
        wake.clear()
        owed: Owed | None = None
        for reply in drained(replies, seen):
            for item in text_events(reply):
                yield item
        if failures := failures_of(turns):
            # Told before any interrupt: the next run shows the requests still open.
            message = "; ".join(str(failure) for failure in failures)
            yield RunErrorEvent(message=message, code="turn_failed")
            return
        held = await held_requests(thread.handler, thread_id, waited=clock() - started)
        if held and not (held := await thread.access.visible(principal, held)):
            # The thread waits on others' answers: nothing of it is the caller's to give.
            outcome: RunFinishedSuccessOutcome | RunFinishedInterruptOutcome | None = (
                RunFinishedSuccessOutcome()
            )
        elif held:
            interrupts = [interrupt_of(thread.handler, r) for r in held]
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        elif held == [] and all(turn.done() for turn in turns) and replies.empty():
            owed = await turn_owed(thread.kit, thread_id, thread.agent)
            outcome = RunFinishedSuccessOutcome() if owed is Owed.NONE else None
        else:
            outcome = None
        if outcome is not None or owed is Owed.STRANDED:
            elsewhere = await recorded_elsewhere(thread.kit, thread_id, seen, own)
            shown, failures = failures_told(elsewhere, sender=principal.actor_id)
            for event in shown:
                for item in text_events(event):
                    yield item
            if failures:
                # A turn of the caller's that failed in another process, told as it is there.
                message = "; ".join(str(failure) for failure in failures)
                yield RunErrorEvent(message=message, code="turn_failed")
                return
        if owed is Owed.STRANDED:
            yield RunErrorEvent(message=STRANDED, code="turn_not_running")
            return
        if outcome is not None:
            for request in held or ():
                for item in held_call(request):
                    yield item
            yield RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)
            return
        # A lost hint costs one backstop interval, never the run.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), BACKSTOP)

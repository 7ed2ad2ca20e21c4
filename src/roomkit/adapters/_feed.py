"""What the protocol adapters share: a room's replies as they come, its caller's turns run in
the background (and which of them failed), and whether a turn is owed.

A front end that is not a page (an AG-UI stream, an A2A task) follows a room while a request
of its caller is in flight: :func:`run_turns` runs the caller's messages as the room's turns
in a task of their own, whose result says which of them failed (:func:`failures_of`: the
follower then ends saying so, never as a success), :class:`FeedChannel` hands it the
agent's replies to the room as the kit delivers them, and :func:`turn_owed` says whether a
turn of the room still runs here or waits in the store's journal for a re-drive (and whether
a process runs it, by its lease), so that a follower knows when the room rests, and when
it waits on a turn no process runs. A turn that ran in another process is read back from the
room store (:func:`recorded_elsewhere`): its replies, or the failure it ended with
(:func:`failures_told`).
:func:`held_requests` says which open requests of the room hold it: each with the deadline
a wait gave it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import logging
import weakref
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from roomkit.adapters._message_claims import MessageClaims
from roomkit.auth.access import Access
from roomkit.auth.names import MAX_ACTOR_CHARS, actor_name_problem
from roomkit.auth.principal import Principal
from roomkit.channels.base import TransportChannel
from roomkit.core.failed_turns import MESSAGE_NAME, failed_turn, record_failure, resend_text
from roomkit.core.framework import RoomKit
from roomkit.core.store import turn_journal
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput
from roomkit.models.room import InboundMessage, RoomEvent
from roomkit.tools.human_input import HumanInputHandler

__all__ = [
    "DEADLINE_GRACE",
    "OPENED_BY",
    "RECENT",
    "STRANDED",
    "EventKey",
    "FeedChannel",
    "Owed",
    "RoomLocks",
    "TurnFailure",
    "drained",
    "event_key",
    "failures_of",
    "failures_told",
    "held_requests",
    "may_open_room",
    "open_room",
    "recorded_elsewhere",
    "room_id_problem",
    "run_turns",
    "seen_now",
    "turn_owed",
]

RECENT = 200
"""How many of a room's last events a follower reads: what the client lacks of them is sent."""
DEADLINE_GRACE = 5.0
"""Seconds a follower waits for a request without a deadline to get one (a turn's wait sets
it just after the create) before it leaves the request out."""


def room_id_problem(room_id: str, *, what: str) -> str | None:
    """What makes ``room_id`` (a thread or context id a client chose) no room id, or
    ``None``: it ends up in every store's columns and in logs, so it is held to the rule of
    an actor name (printable, bounded), and the message does not quote it."""
    problem = actor_name_problem(room_id)
    if problem is None:
        return None
    return (
        f"{what} {problem}: it is 1 to {MAX_ACTOR_CHARS} printable characters, "
        "without a space at either end"
    )


class RoomLocks:
    """One lock per room, for the steps two callers of the same room must not interleave;
    a room's lock lives while someone holds it."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def __call__(self, room_id: str) -> asyncio.Lock:
        lock = self._locks.get(room_id)
        if lock is None:
            lock = self._locks[room_id] = asyncio.Lock()
        return lock


OPENED_BY = "roomkit.opened_by"
"""The key of a room's metadata naming the person whose first use made it. It is written
with the room, in the one write that makes it: when the process that made the room has not
yet put its person on the roster (or never will, stopped between the writes), that person's
next use, here or in another process, finishes opening it instead of being refused."""


async def may_open_room(
    kit: RoomKit,
    access: Access,
    principal: Principal,
    room_id: str,
    handler: HumanInputHandler,
) -> bool:
    """Whether :func:`open_room` would open the room for ``principal`` now, changing
    nothing: a door asks before it checks the rest of a request, and opens the room only
    once it takes the request."""
    room = await kit.store.get_room(room_id)
    if room is None:
        return not await handler.list_pending(room_id=room_id)
    if room.metadata.get(OPENED_BY) == principal.actor_id:
        return True
    return await access.can_see_room(principal, room_id)


async def open_room(
    kit: RoomKit,
    access: Access,
    principal: Principal,
    room_id: str,
    channels: Sequence[str],
    handler: HumanInputHandler,
) -> bool:
    """Make the room on its first use, with ``principal`` on its roster and ``channels``
    attached; ``False`` when it exists and ``principal`` may not follow it, or when it has
    no record yet its id already holds requests (asked there by another door, say an MCP
    server's room): whoever named it first would see the questions asked of no one in it.

    The room is made naming its person (:data:`OPENED_BY`), then ``channels`` are attached
    and the person put on its roster, last: a room whose person is not on its roster yet is
    one whose opening another use of theirs finishes (a first use in another process at the
    same moment, or one stopped between the writes). Callers of one room take its
    :class:`RoomLocks` lock around this: two first uses at once then make it once.
    """
    actor_id = principal.actor_id
    room = await kit.store.get_room(room_id)
    made = False
    if room is None:
        if await handler.list_pending(room_id=room_id):
            return False
        try:
            room = await kit.create_room(room_id, metadata={OPENED_BY: actor_id})
            made = True
        except ValueError:
            # Made by another process just now: a room that exists.
            room = await kit.store.get_room(room_id)
    if room is not None and room.metadata.get(OPENED_BY) == actor_id:
        if made or actor_id not in await access.participants(room_id):
            await _finish_opening(kit, room_id, actor_id, channels)
        return True
    return await access.can_see_room(principal, room_id)


async def _finish_opening(
    kit: RoomKit, room_id: str, actor_id: str, channels: Sequence[str]
) -> None:
    """Attach the ``channels`` the room lacks, then put ``actor_id`` on its roster: the
    person on the roster says the room was opened whole."""
    bound = {binding.channel_id for binding in await kit.store.list_bindings(room_id)}
    for channel_id in channels:
        if channel_id not in bound:
            await kit.attach_channel(room_id, channel_id)
    await kit.add_participant(room_id, actor_id)


class FeedChannel(TransportChannel):
    """A front end as a transport: the agent's replies reach whoever listens to the room."""

    channel_type = ChannelType.WEBSOCKET

    def __init__(self, channel_id: str) -> None:
        super().__init__(channel_id)
        self._listeners: dict[str, set[asyncio.Queue[RoomEvent]]] = {}
        self._wakes: dict[int, asyncio.Event] = {}

    def listen(
        self, room_id: str, wake: asyncio.Event
    ) -> tuple[asyncio.Queue[RoomEvent], Callable[[], None]]:
        """A queue of the replies delivered to ``room_id`` from now on (each sets ``wake``),
        and its undo."""
        queue: asyncio.Queue[RoomEvent] = asyncio.Queue()
        self._listeners.setdefault(room_id, set()).add(queue)
        self._wakes[id(queue)] = wake

        def stop() -> None:
            listeners = self._listeners.get(room_id, set())
            listeners.discard(queue)
            self._wakes.pop(id(queue), None)
            if not listeners:
                self._listeners.pop(room_id, None)

        return queue, stop

    async def deliver(self, event: RoomEvent) -> None:
        """Hand ``event`` to everyone following its room."""
        for queue in self._listeners.get(event.room_id, ()):
            queue.put_nowait(event)
            self._wakes[id(queue)].set()


EventKey = tuple[int, str, datetime]
"""An event as a follower tells it from the others: its id, channel and time."""


def event_key(event: RoomEvent) -> EventKey:
    """The key of ``event``: the same for the event delivered and the event read back."""
    return event.id, event.channel_id, event.created_at


def drained(replies: asyncio.Queue[RoomEvent], seen: set[EventKey]) -> list[RoomEvent]:
    """The replies handed to a follower so far (the queue emptied), each noted in ``seen``."""
    taken = []
    while not replies.empty():
        reply = replies.get_nowait()
        seen.add(event_key(reply))
        taken.append(reply)
    return taken


async def seen_now(kit: RoomKit, room_id: str) -> set[EventKey]:
    """The keys of the room's recent events: what a follower starting now has seen."""
    return {event_key(event) for event in await kit.store.recent_events(room_id, RECENT)}


async def recorded_elsewhere(
    kit: RoomKit, room_id: str, seen: Collection[EventKey], own: str
) -> list[RoomEvent]:
    """The room's recent events a follower has not seen, but for those of its own door:
    the replies of a turn that ran in another process (which delivered them to its own
    followers), and the events that ended such a turn as failed (:func:`failures_told`
    tells them apart), read back from the room store, oldest first."""
    return [
        event
        for event in await kit.store.recent_events(room_id, RECENT)
        if event.channel_id != own and event_key(event) not in seen
    ]


class Owed(enum.Enum):
    """Whether a turn of a room is owed, and whether some process runs it."""

    NONE = "none"
    """No turn of the room runs, nor waits in the journal."""
    RUNNING = "running"
    """A turn runs here, or its lease in the journal says some process runs it."""
    STRANDED = "stranded"
    """The journal holds turns of the room and no process runs them (their leases lapsed):
    only a ``resume_pending()`` carries them on."""


STRANDED = (
    "A turn of this thread was left in the room store and no server process runs it (the "
    "one that ran it stopped): it goes on, with any answer given to it, once the server "
    "calls resume_pending(); or send its message again as a new message"
)
"""What a follower tells its caller when the room's owed turns are :attr:`Owed.STRANDED`."""


async def turn_owed(kit: RoomKit, room_id: str, agent: str) -> Owed:
    """Whether a turn of ``agent`` in the room runs here, or is left in the store for a
    re-drive, and then whether a process runs it."""
    if kit.queued_turns(room_id, agent):
        return Owed.RUNNING
    journal = turn_journal(kit.store)
    if journal is None:
        return Owed.NONE
    owed = [turn for turn in await journal.open_turns() if turn.room_id == room_id]
    if not owed:
        return Owed.NONE
    if any(kit.leases.running(turn) for turn in owed):
        return Owed.RUNNING
    return Owed.STRANDED


@dataclass(frozen=True)
class TurnFailure:
    """A message of the caller's whose turn failed: the caller is told to send it again."""

    what: str
    """What the log and the caller's message call it (``"AG-UI message m0"``)."""
    recorded: bool
    """Whether the room store holds the message (its turn failed after)."""
    error: str
    """The name of the error the turn failed with."""

    def __str__(self) -> str:
        if self.recorded:
            return resend_text(self.what, self.error)
        return f"{self.what} was not recorded, nor handled ({self.error}): send it again"


def failures_told(
    events: Sequence[RoomEvent], *, sender: str | None = None, what: str | None = None
) -> tuple[list[RoomEvent], list[TurnFailure]]:
    """``events`` (recorded elsewhere) as the replies to show, and the failed turns of the
    caller's messages among them: those sent by ``sender``, or called ``what``, each
    message once, as the process that ran them tells its own caller. An event that ended
    a failed turn of someone else's message is neither."""
    replies: list[RoomEvent] = []
    failures: dict[str, TurnFailure] = {}
    for event in events:
        failed = failed_turn(event)  # a person's message holding the key is one to show
        if failed is None:
            replies.append(event)
            continue
        if sender not in (None, failed.sender) or what not in (None, failed.what):
            continue
        failures.setdefault(failed.what, TurnFailure(failed.what, True, failed.error))
    return replies, list(failures.values())


def failures_of(turns: Collection[asyncio.Task[list[TurnFailure]]]) -> list[TurnFailure]:
    """The failed turns of those of ``turns`` that ended (a cancelled one failed none)."""
    return [
        failure
        for task in turns
        if task.done() and not task.cancelled()
        for failure in task.result()
    ]


def run_turns(
    kit: RoomKit,
    room_id: str,
    turns: Sequence[tuple[InboundMessage, str]],
    running: set[asyncio.Task[list[TurnFailure]]],
    *,
    agent: str,
    name: str,
    logger: logging.Logger,
    on_recorded: Callable[[RoomEvent], object] | None = None,
    claims: MessageClaims | None = None,
) -> asyncio.Task[list[TurnFailure]]:
    """Run ``turns`` (each a message and what the log calls it) in the room, in order, in a
    task named ``name`` that ``running`` holds until it ends; the task's result is the turns
    that failed (:func:`failures_of`), for the callers following it to tell.

    A message answers none of its sender's open requests, whatever its text: each starts
    turns. A turn that fails is logged on ``logger`` and the next one runs: the task itself
    never fails of it. The caller is told to send the failed message again, so a message
    recorded before its turn failed is not left in a durable store's journal either:
    ``process_inbound`` ends its turns recording the failure (:mod:`roomkit.core.failed_turns`;
    on a room store that keeps no journal, an event of the ``agent`` channel records it
    here), so that no restart's ``resume_pending`` runs it a second time, no follower
    (:func:`turn_owed`) waits for it, and a follower in another process, or a run replaying
    the answer the turn went on with, tells its caller the same (:func:`failures_told`).
    Each message is recorded with what the log
    calls it (its metadata's ``MESSAGE_NAME``), so that a turn of it re-driven after a
    restart fails under the same name. ``on_recorded`` is called with each message's event
    once the room store has it (``process_inbound``'s).

    With ``claims``, each message is claimed before it runs
    (:mod:`roomkit.adapters._message_claims`): one another process holds, or the room holds
    already, runs here neither, nor do the messages after it (the process that holds it runs
    after it those its own run carries, in order; a later message only this run carries
    runs in neither); one whose turn failed before the room recorded it is given back.
    """

    async def run() -> list[TurnFailure]:
        failures: list[TurnFailure] = []
        for sent, what in turns:
            inbound = dataclasses.replace(sent, metadata={**sent.metadata, MESSAGE_NAME: what})
            recorded: list[RoomEvent] = []
            note = functools.partial(_noted, recorded, on_recorded)
            try:
                if claims is not None and not await claims.claim(room_id, inbound):
                    logger.info("%s runs in another process", what)
                    break
                # Answers come through the door's own way (a follow-up on the task that
                # asked, a resume): a new message answers no open request.
                await kit.process_inbound(
                    inbound, room_id=room_id, text_answers=False, on_recorded=note
                )
            except Exception as error:
                logger.exception("The turn of %s failed", what)
                failure = TurnFailure(what, bool(recorded), type(error).__name__)
                failures.append(failure)
                await _failed(kit, agent, failure, recorded, claims, room_id, inbound, logger)
        return failures

    task = asyncio.get_running_loop().create_task(run(), name=name)
    running.add(task)
    task.add_done_callback(running.discard)
    return task


async def _failed(
    kit: RoomKit,
    agent: str,
    failure: TurnFailure,
    recorded: list[RoomEvent],
    claims: MessageClaims | None,
    room_id: str,
    inbound: InboundMessage,
    logger: logging.Logger,
) -> None:
    """Record ``failure`` in the room when the room holds its message; else give back the
    claim on the message this process holds (of ``claims``), so that it runs when it is
    sent again."""
    what = failure.what
    if recorded:
        try:
            await record_failure(kit.store, recorded[0], failure.error, channel_id=agent)
        except Exception:
            logger.exception("The failure of %s is missing from the room's history", what)
    elif claims is not None:
        try:
            await claims.release(room_id, inbound)
        except Exception:
            # Its lease lapses all the same: sent again after it, the message runs.
            logger.exception("The claim on %s was not given back", what)


def _noted(
    recorded: list[RoomEvent], then: Callable[[RoomEvent], object] | None, event: RoomEvent
) -> None:
    """Note that the room store holds ``event``, then tell ``then``."""
    recorded.append(event)
    if then is not None:
        then(event)


async def held_requests(
    handler: HumanInputHandler, room_id: str, *, waited: float
) -> list[PendingInput] | None:
    """The open requests that hold the room, each with its deadline; ``None`` while one
    still waits for its deadline.

    A request no wait will ever give a deadline (a detached one, or one whose wait never
    started after ``DEADLINE_GRACE`` seconds) is left out: it holds no turn, and a follower
    that waited for its deadline would never end.

    Args:
        waited: seconds the follower has looked at the room so far.
    """
    found = await handler.list_pending(room_id=room_id)
    if waited < DEADLINE_GRACE and any(
        request.deadline is None and not request.detached for request in found
    ):
        return None
    return [request for request in found if request.deadline is not None]

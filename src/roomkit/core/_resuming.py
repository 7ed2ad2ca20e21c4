"""Resuming: the turns an earlier process left unfinished, run again at start-up.

``RoomKit.resume_pending`` hands this module the room store's turn journal, the registered
channels, the kit's turn lanes and a way to deliver a reply to its room. Every open turn
takes its place in its lane before any of them runs, so queued turns keep their order and a
message arriving meanwhile waits behind them. A turn whose channel is not registered is left
for a later start; one turn that fails is logged and never fails the turns beside it, and
ends failed as a turn failing where it started does (:mod:`roomkit.core.failed_turns`): no
later start runs it again, and followers of its room elsewhere read the failure. Each
turn run here is leased to this process first, and its lease renewed while it runs
(:mod:`roomkit.core._leases`); one ended meanwhile by the process that ran it is left alone.
Each turn runs in a task of its own that :class:`ResumedTurns` holds, so that a door can cut
one on purpose (an A2A task cancelled) as it cuts a turn it started itself: the turn stops
where it is, is ended in the journal so that no later start runs it again, and the turns
beside it go on. A cut made while a resume still reads the journal and leases its turns
(the server already serves, the turn is not running yet) is kept until that resume starts
its turns: a turn it picks is ended in the journal there, never run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from roomkit.core._lanes import Place, TurnLanes, runs_one_turn_at_a_time
from roomkit.core._leases import Leases
from roomkit.core.failed_turns import fail_turns
from roomkit.core.ports import KitChannel, ResumableChannel, resumes
from roomkit.core.store import JournalStep, OpenTurn, TurnJournal
from roomkit.models.room import RoomEvent

__all__ = ["ResumedTurns", "resume_turns"]

logger = logging.getLogger("roomkit.framework")

Deliver = Callable[[RoomEvent], Awaitable[None]]
"""Delivers a resumed turn's reply to the channels bound to its room."""


@dataclass(eq=False)
class _Resumed:
    """One turn re-driven here: its record, its journal, the task running it."""

    turn: OpenTurn
    journal: TurnJournal
    task: asyncio.Task[RoomEvent | None]
    cut: bool = False
    """Cut on purpose (:meth:`ResumedTurns.cut`), not failed."""


class ResumedTurns:
    """The turns this process re-drives (``resume_pending``), each in its own task, so that
    one can be cut on purpose as a turn is cut whose caller is cancelled."""

    def __init__(self) -> None:
        self._running: dict[str, _Resumed] = {}
        self._reading = 0
        # The cuts made while a resume reads the journal, for the turns it is about to start.
        self._early: list[Callable[[OpenTurn], bool]] = []

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """While a resume reads the journal and leases its turns, before it starts them:
        the cuts made meanwhile are kept for :meth:`cut_early` to ask."""
        self._reading += 1
        try:
            yield
        finally:
            self._reading -= 1
            if not self._reading:
                self._early.clear()

    def cut_early(self, turn: OpenTurn) -> bool:
        """Whether a cut made while ``turn`` was being read picks it (it must not run)."""
        return any(match(turn) for match in self._early)

    def start(
        self,
        journal: TurnJournal,
        turn: OpenTurn,
        resume: Coroutine[Any, Any, RoomEvent | None],
        place: Place | None = None,
    ) -> _Resumed:
        """Run ``resume`` (the re-drive of ``turn``, in its lane at ``place``) in a task held
        until it ends."""
        task = asyncio.get_running_loop().create_task(resume, name=f"resume:{turn.turn_id}")
        run = self._running[turn.turn_id] = _Resumed(turn, journal, task)
        task.add_done_callback(lambda _: self._forget(run))
        if place is not None:
            # A task cut before its first step never enters its place: it is left here.
            task.add_done_callback(lambda _: place.leave())
        return run

    async def cut(self, match: Callable[[OpenTurn], bool]) -> list[list[JournalStep]]:
        """Cut the re-driven turns ``match`` picks, wherever they are (waiting in their lane,
        in a model round, on a call, whose handler's ``on_tool_cancelled`` runs), wait until
        they let go, and end each in its journal so that no later ``resume_pending()`` runs
        it again; the steps each turn cut had recorded (a request one of its calls asked on
        a durable store stays open for a re-attach that now never comes: the caller
        withdraws it). A turn a resume has read from the journal and not started yet is
        picked as that resume starts its turns, and ended there without running.

        Raises:
            StoreUnavailableError: the room store cannot be reached (the turns are cut, and
                stay open in the journal).
        """
        if self._reading:
            # A turn a resume has read but not started yet is not running: it is picked
            # when that resume starts its turns.
            self._early.append(match)
        picked = [run for run in self._running.values() if match(run.turn)]
        for run in picked:
            run.cut = True
            run.task.cancel()
        if picked:
            await asyncio.wait({run.task for run in picked})
        steps = []
        for run in picked:
            steps.append(await run.journal.steps(run.turn.turn_id))
            await run.journal.end_turn(run.turn.turn_id)
        return steps

    def _forget(self, run: _Resumed) -> None:
        if self._running.get(run.turn.turn_id) is run:
            del self._running[run.turn.turn_id]


async def resume_turns(
    journal: TurnJournal,
    channels: Mapping[str, KitChannel],
    lanes: TurnLanes,
    deliver: Deliver,
    leases: Leases,
    resumed: ResumedTurns,
) -> list[RoomEvent]:
    """Run every open turn of ``journal`` again; the replies they made, in turn order.

    Args:
        journal: the durable room store's record of turns in flight.
        channels: the registered channels, by id (read when each turn starts).
        lanes: the kit's turn lanes, where a one-turn-at-a-time channel's turns queue.
        deliver: called with each reply once its turn has stored it.
        leases: the kit's turn leases: each turn run here is leased again, and renewed
            while it runs, so other processes following its room know it runs.
        resumed: where each turn's task is held while it runs (a turn cut there makes no
            reply and fails nothing).

    Raises:
        asyncio.CancelledError: the resuming was cancelled; any other failure of a turn is
            logged and leaves the others running.
    """
    with resumed.reading():
        found = await journal.open_turns()
        places = [
            lanes.take(turn.room_id, turn.channel_id)
            if runs_one_turn_at_a_time(channels.get(turn.channel_id))
            else None
            for turn in found
        ]
        turns, places = await _claimed(journal, found, places, channels, leases)
        turns, places, cut = _not_cut(resumed, turns, places)
    # Nothing is awaited from the look at the cuts to the starts: a later cut finds the
    # turns running.
    with leases.held(journal, (t for t in turns if resumes(channels.get(t.channel_id)))):
        runs = [
            resumed.start(
                journal,
                turn,
                _resume(journal, turn, channels.get(turn.channel_id), place, deliver),
                place,
            )
            for turn, place in zip(turns, places, strict=True)
        ]
        # The cut turns end beside the others' runs: a cancelled resume cancels them all.
        *results, _ = await asyncio.gather(
            *(run.task for run in runs), _end_cut(journal, cut), return_exceptions=True
        )
    replies: list[RoomEvent] = []
    for run, result in zip(runs, results, strict=True):
        turn = run.turn
        if isinstance(result, BaseException):
            if isinstance(result, asyncio.CancelledError):
                if run.cut:
                    continue
                raise result
            logger.error(
                "Turn %s in room %s could not be resumed",
                turn.turn_id,
                turn.room_id,
                exc_info=result,
            )
        elif result is not None:
            replies.append(result)
    return replies


def _not_cut(
    resumed: ResumedTurns, turns: list[OpenTurn], places: list[Place | None]
) -> tuple[list[OpenTurn], list[Place | None], list[OpenTurn]]:
    """The turns to run and their places, and the turns a cut picked while they were read
    (each leaves its place)."""
    kept: list[tuple[OpenTurn, Place | None]] = []
    cut: list[OpenTurn] = []
    for turn, place in zip(turns, places, strict=True):
        if resumed.cut_early(turn):
            if place is not None:
                place.leave()
            cut.append(turn)
        else:
            kept.append((turn, place))
    return [turn for turn, _ in kept], [place for _, place in kept], cut


async def _end_cut(journal: TurnJournal, turns: list[OpenTurn]) -> None:
    """End in the journal the turns cut before they ran, so that no later start runs them;
    one the store cannot end is logged (the turns beside it run on)."""
    for turn in turns:
        try:
            await journal.end_turn(turn.turn_id)
        except Exception:
            logger.error(
                "Turn %s in room %s was cut before it ran and stays open in the journal",
                turn.turn_id,
                turn.room_id,
                exc_info=True,
            )


async def _claimed(
    journal: TurnJournal,
    turns: list[OpenTurn],
    places: list[Place | None],
    channels: Mapping[str, KitChannel],
    leases: Leases,
) -> tuple[list[OpenTurn], list[Place | None]]:
    """The turns to run (those this kit resumes leased to this process), and their
    places; a turn ended meanwhile (by the process that ran it) leaves its place.

    Raises:
        StoreUnavailableError: the room store cannot be reached (every place is left).
    """
    try:
        # One write leases every turn this kit resumes, whatever their number.
        claimed = {
            turn.turn_id: turn
            for turn in await leases.claim(
                journal, [turn for turn in turns if resumes(channels.get(turn.channel_id))]
            )
        }
    except BaseException:
        for place in places:
            if place is not None:
                place.leave()
        raise
    kept: list[tuple[OpenTurn, Place | None]] = []
    for turn, place in zip(turns, places, strict=True):
        if resumes(channels.get(turn.channel_id)):
            if turn.turn_id not in claimed:
                if place is not None:
                    place.leave()
                continue
            turn = claimed[turn.turn_id]
        kept.append((turn, place))
    return [turn for turn, _ in kept], [place for _, place in kept]


async def _resume(
    journal: TurnJournal,
    turn: OpenTurn,
    channel: KitChannel | None,
    place: Place | None,
    deliver: Deliver,
) -> RoomEvent | None:
    if resumes(channel):
        return await _resume_on(journal, channel, turn, place, deliver)
    if place is not None:
        place.leave()
    logger.warning(
        "Turn %s waits for channel %r, which is not registered: left for later",
        turn.turn_id,
        turn.channel_id,
    )
    return None


async def _resume_on(
    journal: TurnJournal,
    channel: ResumableChannel,
    turn: OpenTurn,
    place: Place | None,
    deliver: Deliver,
) -> RoomEvent | None:
    # The channel stores the reply with the turn's end; it is delivered from here.
    async with place if place is not None else contextlib.nullcontext():
        try:
            reply = await channel.resume_turn(turn)
        except Exception as error:
            await fail_turns(journal, [turn], error)
            raise
    if reply is None:
        return None
    await deliver(reply)
    return reply

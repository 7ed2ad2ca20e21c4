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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping

from roomkit.core._lanes import Place, TurnLanes, runs_one_turn_at_a_time
from roomkit.core._leases import Leases
from roomkit.core.failed_turns import fail_turns
from roomkit.core.ports import KitChannel, ResumableChannel, resumes
from roomkit.core.store import OpenTurn, TurnJournal
from roomkit.models.room import RoomEvent

__all__ = ["resume_turns"]

logger = logging.getLogger("roomkit.framework")

Deliver = Callable[[RoomEvent], Awaitable[None]]
"""Delivers a resumed turn's reply to the channels bound to its room."""


async def resume_turns(
    journal: TurnJournal,
    channels: Mapping[str, KitChannel],
    lanes: TurnLanes,
    deliver: Deliver,
    leases: Leases,
) -> list[RoomEvent]:
    """Run every open turn of ``journal`` again; the replies they made, in turn order.

    Args:
        journal: the durable room store's record of turns in flight.
        channels: the registered channels, by id (read when each turn starts).
        lanes: the kit's turn lanes, where a one-turn-at-a-time channel's turns queue.
        deliver: called with each reply once its turn has stored it.
        leases: the kit's turn leases: each turn run here is leased again, and renewed
            while it runs, so other processes following its room know it runs.

    Raises:
        asyncio.CancelledError: the resuming was cancelled; any other failure of a turn is
            logged and leaves the others running.
    """
    found = await journal.open_turns()
    places = [
        lanes.take(turn.room_id, turn.channel_id)
        if runs_one_turn_at_a_time(channels.get(turn.channel_id))
        else None
        for turn in found
    ]
    turns, places = await _claimed(journal, found, places, channels, leases)
    with leases.held(journal, (t for t in turns if resumes(channels.get(t.channel_id)))):
        results = await asyncio.gather(
            *(
                _resume(journal, turn, channels.get(turn.channel_id), place, deliver)
                for turn, place in zip(turns, places, strict=True)
            ),
            return_exceptions=True,
        )
    replies: list[RoomEvent] = []
    for turn, result in zip(turns, results, strict=True):
        if isinstance(result, BaseException):
            if isinstance(result, asyncio.CancelledError):
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

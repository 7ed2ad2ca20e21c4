"""The turns an inbound message starts: the last step of ``process_inbound``.

Once the message is checked and answers no open question (``_answers``), the room's
responding channels other than the sender's each run a turn on it. On a durable room store
the message is recorded together with the turns it starts (one per channel that can resume
a turn), and such a channel stores its reply with its turn's end; any other reply is stored
here. A channel that runs one turn at a time in a room takes its place in the kit's lane
before anything yields (``_lanes``), so turns run in the order their messages were
recorded. The message, then each reply, is delivered to the room's channels. A journalled
turn is recorded with a lease and renewed while it runs or queues (:mod:`roomkit.core._leases`),
so that other processes know it runs. A turn keeps the door's name for its message
(:data:`roomkit.core.failed_turns.MESSAGE_NAME`), which its failure tells. When a turn
fails, the error goes to the caller, and the message's journalled turns not finished (the
one that failed, those that never ran) end failed (:mod:`roomkit.core.failed_turns`): no
restart's ``resume_pending`` runs them again, and followers of the room read the failure.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Sequence

from roomkit.core._lanes import TurnLanes, runs_one_turn_at_a_time
from roomkit.core._leases import Leases
from roomkit.core.failed_turns import MESSAGE_NAME, fail_turns
from roomkit.core.ports import KitChannel, responds, resumes
from roomkit.core.store import OpenTurn, RoomStore, turn_journal
from roomkit.models.room import RoomEvent

__all__ = ["run_turns"]

Deliver = Callable[[RoomEvent], Awaitable[None]]
"""Delivers the message, then each reply, to the channels bound to the room."""


async def run_turns(
    event: RoomEvent,
    bound: Sequence[KitChannel],
    *,
    store: RoomStore,
    lanes: TurnLanes,
    deliver: Deliver,
    announcing: Callable[[], contextlib.AbstractContextManager[None]],
    leases: Leases,
    on_recorded: Callable[[RoomEvent], object] | None = None,
) -> tuple[RoomEvent, ...]:
    """Record ``event``, run a turn of each responding channel of ``bound`` on it, deliver
    the replies; the replies, in the order the channels are bound.

    Args:
        event: the inbound message, as the room records it.
        bound: the registered channels bound to the event's room.
        store: the room store (a durable one records the turns with the message).
        lanes: the kit's turn lanes, where a one-turn-at-a-time channel's turns queue.
        deliver: called with the message once recorded, then with each reply.
        announcing: the kit's context in which new human-input requests go to its hooks;
            the turns run inside it.
        leases: the kit's turn leases, renewed while the journalled turns run.
        on_recorded: called with ``event`` once the room store has it, before the turns run.
    """
    room_id = event.room_id
    responders = [
        channel for channel in bound if channel.channel_id != event.channel_id and responds(channel)
    ]
    journal = turn_journal(store)
    turns: dict[str, OpenTurn] = {}
    if journal is not None:
        turns = {
            channel.channel_id: leases.begun(
                journal,
                OpenTurn(
                    os.urandom(16).hex(),
                    room_id,
                    channel.channel_id,
                    event.sender_id or None,
                    _turn_state(event),
                ),
            )
            for channel in responders
            if resumes(channel)
        }
        await journal.record_inbound(event, list(turns.values()))
    else:
        await store.add_event(event)
    # Places are taken before anything yields, in the order messages are recorded.
    places = {
        channel.channel_id: lanes.take(room_id, channel.channel_id)
        for channel in responders
        if runs_one_turn_at_a_time(channel)
    }
    renewing = (
        leases.held(journal, turns.values()) if journal is not None else contextlib.nullcontext()
    )
    # Leased from the record on: the turns are this process's while they run or queue.
    with renewing:
        try:
            if on_recorded is not None:
                on_recorded(event)
            await deliver(event)
            responses: list[RoomEvent] = []
            with announcing():
                for channel in responders:
                    place = places.get(channel.channel_id)
                    async with place if place is not None else contextlib.nullcontext():
                        turn = turns.get(channel.channel_id)
                        if turn is not None:
                            # The channel stores its reply with the turn's end.
                            reply = await channel.respond(room_id, event, turn=turn)
                        elif (reply := await channel.respond(room_id, event)) is not None:
                            await store.add_event(reply)
                    if reply is None:
                        continue
                    responses.append(reply)
                    await deliver(reply)
        except Exception as error:
            # The caller is told; the message's turns not finished end failed with it.
            if journal is not None:
                await fail_turns(journal, turns.values(), error)
            raise
        finally:
            for place in places.values():
                place.leave()
    return tuple(responses)


def _turn_state(event: RoomEvent) -> dict[str, object]:
    """What a journalled turn on the message ``event`` keeps: the message's id, and the
    name a door gave it, if any."""
    state: dict[str, object] = {"message_id": event.id}
    name = event.metadata.get(MESSAGE_NAME)
    if isinstance(name, str) and name:
        state[MESSAGE_NAME] = name
    return state

"""Turn lanes: one lane per room and channel, where turns wait their turn.

A channel that runs one turn at a time in a room (an ``AIChannel`` without
``concurrent_turns=True``) gets a lane per room. The kit takes a place in the lane when it
records the message that starts the turn (or, after a restart, when it re-drives the turn),
without yielding to the event loop, so places are taken in the order the messages were
recorded; a turn runs once every place before it has been left.
"""

from __future__ import annotations

import asyncio

__all__ = ["Place", "TurnLanes", "runs_one_turn_at_a_time"]


def runs_one_turn_at_a_time(channel: object) -> bool:
    """True for a channel whose turns in one room run one after another."""
    return getattr(channel, "concurrent_turns", True) is False


class Place:
    """A place in a lane: ``async with place:`` waits for the turns before it, then holds
    the lane until the block ends. A place that is never entered must be ``leave()``-d."""

    def __init__(
        self, lanes: TurnLanes, key: tuple[str, str], before: asyncio.Future[None] | None
    ) -> None:
        self._lanes = lanes
        self._key = key
        self._before = before
        self._done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._left = False

    async def __aenter__(self) -> None:
        before = self._before
        if before is None or before.done():
            return
        try:
            await asyncio.shield(before)
        except asyncio.CancelledError:
            self.leave()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self.leave()

    def leave(self) -> None:
        """Give the place up: the next turn runs once the turns before this one are done."""
        if self._left:
            return
        self._left = True
        before = self._before
        if before is None or before.done():
            self._release()
        else:
            # Left while waiting: the next turn still waits for the ones before this place.
            before.add_done_callback(lambda _: self._release())

    def _release(self) -> None:
        if not self._done.done():
            self._done.set_result(None)
        self._lanes._forget(self._key, self._done)


class TurnLanes:
    """The lanes of a kit, by (room id, channel id)."""

    def __init__(self) -> None:
        self._tails: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._waiting: dict[tuple[str, str], int] = {}

    def take(self, room_id: str, channel_id: str) -> Place:
        """A place at the end of the lane of ``channel_id`` in ``room_id`` (never yields)."""
        key = (room_id, channel_id)
        place = Place(self, key, self._tails.get(key))
        self._tails[key] = place._done
        self._waiting[key] = self._waiting.get(key, 0) + 1
        return place

    def waiting(self, room_id: str, channel_id: str) -> int:
        """How many turns hold or wait for a place in this lane."""
        return self._waiting.get((room_id, channel_id), 0)

    def _forget(self, key: tuple[str, str], done: asyncio.Future[None]) -> None:
        left = self._waiting.get(key, 0) - 1
        if left > 0:
            self._waiting[key] = left
        else:
            self._waiting.pop(key, None)
        if self._tails.get(key) is done:
            del self._tails[key]

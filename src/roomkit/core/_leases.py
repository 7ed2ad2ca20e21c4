"""Turn leases: which journalled turns some process runs, as the room store tells it.

On a room store that keeps leases (:class:`~roomkit.core.store.TurnLeases`), a turn the kit
begins carries in its state until when this process runs it (``"lease_until"``, seconds
since the epoch on the kit's clock), and :class:`Leases` renews it every third of its term
while the turn runs or waits in its lane. A process that stops (killed, or restarted and
never calling ``resume_pending``) stops renewing: within one term its turns' leases lapse,
and a process following the room knows that no process runs them, until a
``resume_pending`` takes them and leases them again. A turn whose state holds no lease (begun
by an earlier version, or by a channel on its own) is taken as running, as it was before
leases existed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from roomkit.core.store import OpenTurn, TurnJournal, TurnLeases

__all__ = ["LEASE", "Leases"]

logger = logging.getLogger("roomkit.framework")

LEASE = "lease_until"
"""The key of a turn's state that holds its lease."""


class Leases:
    """The leases of the journalled turns this process runs, renewed while they run.

    Args:
        term: seconds a lease lasts; it is renewed every third of it.
        clock: seconds since the epoch (``time.time``): the clock every process sharing
            the store reads, so their clocks must agree to well within ``term``.
    """

    def __init__(self, *, term: float, clock: Callable[[], float]) -> None:
        self.term = term
        self._clock = clock
        self._held: dict[str, OpenTurn] = {}
        self._renewing: asyncio.Task[None] | None = None

    def stamped(self, turn: OpenTurn) -> OpenTurn:
        """``turn`` with a lease of one term from now in its state."""
        return replace(turn, state={**turn.state, LEASE: self._clock() + self.term})

    def begun(self, journal: TurnJournal, turn: OpenTurn) -> OpenTurn:
        """``turn`` as the kit begins it in ``journal``: with a lease when the journal keeps
        leases (a lease never renewed would lapse while the turn runs)."""
        return self.stamped(turn) if isinstance(journal, TurnLeases) else turn

    def running(self, turn: OpenTurn) -> bool:
        """Whether a process holds ``turn``'s lease; a turn without one is taken as running."""
        until = turn.state.get(LEASE)
        if isinstance(until, bool) or not isinstance(until, int | float):
            return True
        return until > self._clock()

    async def claim(self, journal: TurnJournal, turn: OpenTurn) -> OpenTurn | None:
        """``turn`` with a fresh lease, written to ``journal``; ``None`` when the turn is no
        longer open. A journal that keeps no leases takes ``turn`` as it is."""
        if not isinstance(journal, TurnLeases):
            return turn
        stamped = self.stamped(turn)
        return stamped if await journal.renew_turn(stamped) else None

    @contextlib.contextmanager
    def held(self, journal: TurnJournal, turns: Iterable[OpenTurn]) -> Iterator[None]:
        """Renew the leases of ``turns`` (already stamped and written) while the block runs."""
        if not isinstance(journal, TurnLeases):
            yield
            return
        mine = {turn.turn_id: turn for turn in turns}
        ids = list(mine)
        self._held.update(mine)
        loop = asyncio.get_running_loop()
        renewing = self._renewing
        # A kit used on a new event loop renews there: a task of a loop gone never runs.
        if ids and (renewing is None or renewing.done() or renewing.get_loop() is not loop):
            self._renewing = loop.create_task(self._renew(journal), name="renew:turn-leases")
        try:
            yield
        finally:
            for turn_id in ids:
                self._held.pop(turn_id, None)
            if not self._held:
                self.stop()

    async def _renew(self, journal: TurnLeases) -> None:
        while self._held:
            await asyncio.sleep(self.term / 3)
            for turn_id, turn in list(self._held.items()):
                renewed = self.stamped(turn)
                try:
                    still_open = await journal.renew_turn(renewed)
                except Exception:
                    # The next round tries again: the lease lasts three rounds.
                    logger.warning("The lease of turn %s was not renewed", turn_id, exc_info=True)
                    continue
                if turn_id in self._held:
                    if still_open:
                        self._held[turn_id] = renewed
                    else:
                        del self._held[turn_id]

    def stop(self) -> None:
        """Stop renewing (the kit closes): the leases held lapse within one term."""
        renewing, self._renewing = self._renewing, None
        if renewing is not None and not renewing.get_loop().is_closed():
            renewing.cancel()

"""Turn leases: which journalled turns some process runs, as the room store tells it.

On a room store that keeps leases (:class:`~roomkit.core.store.TurnLeases`), a turn the kit
begins carries in its state until when this process runs it (``"lease_until"``, seconds
since the epoch on the kit's clock), and :class:`Leases` renews it every third of its term
while the turn runs or waits in its lane: every turn it holds in one write, so turns that
wait for hours for people cost one write a round however many they are. A process that stops
(killed, or restarted and never calling ``resume_pending``) stops renewing: within one term
its turns' leases lapse, and a process following the room knows that no process runs them,
until a ``resume_pending`` takes them and leases them again. A turn whose state holds no
lease (begun by an earlier version, or by a channel on its own) is taken as running, as it
was before leases existed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
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

    async def claim(self, journal: TurnJournal, turns: Sequence[OpenTurn]) -> list[OpenTurn]:
        """Those of ``turns`` still open, with a fresh lease written to ``journal`` in one
        write, in their order. A journal that keeps no leases takes ``turns`` as they are.

        Raises:
            StoreUnavailableError: the room store cannot be reached (nothing is claimed).
        """
        if not isinstance(journal, TurnLeases):
            return list(turns)
        stamped = self._stamped_all(turns)
        still_open = await journal.renew_turns(stamped)
        return [turn for turn in stamped if turn.turn_id in still_open]

    def _stamped_all(self, turns: Iterable[OpenTurn]) -> list[OpenTurn]:
        """``turns``, each with the same lease of one term from now in its state."""
        until = self._clock() + self.term
        return [replace(turn, state={**turn.state, LEASE: until}) for turn in turns]

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
            await self.renew(journal)

    async def renew(self, journal: TurnLeases) -> None:
        """One round: renew the lease of every turn held, in one write whatever their
        number, and let go of those no longer open. A round that fails is logged and
        leaves the leases to the next (a lease lasts three rounds); a turn whose state the
        journal refuses is renewed on its own, so it never holds back the others."""
        renewed = self._stamped_all(self._held.values())
        if not renewed:
            return
        try:
            try:
                still_open = await journal.renew_turns(renewed)
            except TypeError:
                still_open = await self._one_by_one(journal, renewed)
        except Exception:
            logger.warning("The leases of %d turns were not renewed", len(renewed), exc_info=True)
            return
        for turn in renewed:
            # A turn the kit let go of meanwhile is no longer this round's to keep.
            if turn.turn_id not in self._held:
                continue
            if turn.turn_id in still_open:
                self._held[turn.turn_id] = turn
            else:
                del self._held[turn.turn_id]

    async def _one_by_one(self, journal: TurnLeases, turns: list[OpenTurn]) -> frozenset[str]:
        """Renew ``turns`` each in a write of its own (one's state is not JSON-ready): the
        ids renewed, with those refused (still held, their leases left to lapse)."""
        renewed: set[str] = set()
        for turn in turns:
            try:
                renewed |= await journal.renew_turns([turn])
            except TypeError:
                logger.error("The lease of turn %s cannot be renewed", turn.turn_id, exc_info=True)
                renewed.add(turn.turn_id)
        return frozenset(renewed)

    def stop(self) -> None:
        """Stop renewing (the kit closes): the leases held lapse within one term."""
        renewing, self._renewing = self._renewing, None
        if renewing is not None and not renewing.get_loop().is_closed():
            renewing.cancel()

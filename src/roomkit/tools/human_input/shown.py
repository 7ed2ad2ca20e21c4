"""A request's ``shown`` entries: one per surface that put it in front of a person.

Every surface that shows an open request to a person records it in the request's history
through :class:`ShownTrail`: the desk's HTTP API (``desk``), its WebSocket (``websocket``)
and each notification surface (by its name). A request gets one ``shown`` entry per
surface, naming the first person it was shown to there, however often and to however many
people that surface shows it again, and whichever process shows it: the handler's spend
ledger (:attr:`~roomkit.tools.human_input.HumanInputHandler.ledger`), shared by every
process on a durable store, spends ``notify:shown:{id}:{surface}`` once (and keeps it
:data:`SHOWN_KEEP`: a request still open a week later may be recorded again). A settled
request is shown no more: the surfaces pass only the open requests they show, so a
``shown`` entry follows the ``settled`` one only when the request settled elsewhere in the
instant it was being shown.

Recording never fails the surface: a store that cannot be reached is logged, and the
ledger entry of a ``shown`` entry that the store refused is refunded, so that the next
showing tries again. An append that the store could not see through (unreachable, or cut by
its timeout) may still land once the store answers: its mark stays spent, so that no showing
writes the entry a second time, and this process's next showing of the request reads its
history and writes the entry only if it is not there. A surface cut off while it records
(a socket closed, a request cancelled) does not cut the recording: once its mark is being
spent, the entry is written all the same, and :meth:`ShownTrail.idle` waits for such writes
(a surface shutting down).

The trail remembers what this process recorded already, so that a listing shown again
costs no round trip; what it does not know is read from the ledger in one read (one
request alone is simply spent), and the new entries are written concurrently, a few at a
time.

What counts as shown is each surface's to say (the desk's is in :mod:`roomkit.desk.hub`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Iterable

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores import new_entry
from roomkit.stores.outbox import now_of
from roomkit.tools.human_input._shown_marks import mark
from roomkit.tools.human_input.handler import HumanInputHandler

__all__ = ["SHOWN_KEEP", "ShownTrail"]

logger = logging.getLogger("roomkit.tools.human_input")

SHOWN_KEEP = 7 * 86_400.0
"""Seconds the ledger keeps a request's ``shown`` mark for a surface."""
_REMEMBERED = 4096
"""How many (request, surface) pairs a trail remembers as recorded in this process."""
_WRITES = 16
"""``shown`` entries a trail writes at once."""


class ShownTrail:
    """Writes the ``shown`` entries of one handler's requests, once per surface.

    Args:
        handler: the handler whose requests are shown.
    """

    def __init__(self, handler: HumanInputHandler) -> None:
        self.handler = handler
        self._recorded: dict[str, None] = {}
        # Marks spent here whose append may or may not have landed: looked for at the next
        # showing.
        self._unsure: dict[str, None] = {}
        self._writing: set[asyncio.Task[bool]] = set()

    async def idle(self) -> None:
        """Return once the entries being written (some for surfaces cut off) are written."""
        while self._writing:
            await asyncio.wait(set(self._writing))

    async def record(self, pending_ids: Iterable[str], surface: str, actor: str | None) -> int:
        """Record that ``surface`` showed the open requests ``pending_ids`` to ``actor``;
        how many entries it wrote.

        The caller passes the requests it showed open (a settled request is shown no more).
        Those ``surface`` showed before, through any process on the store, are skipped.
        Never raises: a failing store is logged.
        """
        names = {mark(pending_id, surface): pending_id for pending_id in pending_ids}
        fresh = [name for name in names if name not in self._recorded]
        if not fresh:
            return 0
        spent: Collection[str] = ()
        try:
            if len(fresh) > 1:
                # One read spares the writes of those shown already; for one, the spend is
                # the check.
                spent = await self.handler.ledger.read_spent(fresh)
        except Exception as error:
            logger.warning(
                "Could not read which requests %s showed already: %s",
                surface,
                error,
                extra={"event": "shown_failed", "surface": surface},
            )
            return 0
        unsure = self._unsure
        for name in spent:
            if name not in unsure:
                self._remember(name)
        new = [name for name in fresh if name not in spent or name in unsure]
        if len(new) == 1:
            return int(await self._write(new[0], names[new[0]], surface, actor))
        written = 0
        for start in range(0, len(new), _WRITES):
            batch = new[start : start + _WRITES]
            done = await asyncio.gather(
                *(self._write(name, names[name], surface, actor) for name in batch)
            )
            written += sum(done)
        return written

    async def _write(self, name: str, pending_id: str, surface: str, actor: str | None) -> bool:
        """:meth:`_spend_and_append`, carried on if the caller is cancelled meanwhile."""
        task = asyncio.ensure_future(self._spend_and_append(name, pending_id, surface, actor))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)
        return await asyncio.shield(task)

    async def _spend_and_append(
        self, name: str, pending_id: str, surface: str, actor: str | None
    ) -> bool:
        """Spend ``name`` and append its ``shown`` entry (or, with the mark spent here by an
        append of unknown outcome, append it unless the history holds it)."""
        if name in self._unsure:
            return await self._append_unless_there(name, pending_id, surface, actor)
        try:
            if not await self.handler.ledger.spend_once(name, until=self._now() + SHOWN_KEEP):
                self._remember(name)
                return False
        except Exception as error:
            self._failed(pending_id, surface, error)
            return False
        return await self._append(name, pending_id, surface, actor)

    async def _append(self, name: str, pending_id: str, surface: str, actor: str | None) -> bool:
        """Append the ``shown`` entry whose mark is spent; refund the mark if the store
        refused it, keep it (the entry unsure) if the store did not see the append through."""
        try:
            await self.handler.record(pending_id, new_entry("shown", actor=actor, surface=surface))
        except StoreUnavailableError as error:
            # The append may run after the store gave up on it: a refund would let the next
            # showing write a second entry.
            self._failed(pending_id, surface, error)
            self._doubt(name)
            return False
        except Exception as error:
            self._failed(pending_id, surface, error)
            try:
                await self.handler.ledger.refund_spent(name)
            except Exception as refund_error:
                self._failed(pending_id, surface, refund_error)
            return False
        self._remember(name)
        return True

    async def _append_unless_there(
        self, name: str, pending_id: str, surface: str, actor: str | None
    ) -> bool:
        """Append the entry of an unsure mark if the request's history lacks it."""
        # Taken while this showing looks: one at the same time finds the mark spent.
        del self._unsure[name]
        try:
            history = await self.handler.history(pending_id)
        except Exception as error:
            self._failed(pending_id, surface, error)
            self._doubt(name)
            return False
        if any(e.get("type") == "shown" and e.get("surface") == surface for e in history):
            self._remember(name)
            return False
        return await self._append(name, pending_id, surface, actor)

    def _doubt(self, name: str) -> None:
        """``name``'s mark is spent here, and whether its entry landed is unknown."""
        self._recorded.pop(name, None)
        self._unsure[name] = None
        if len(self._unsure) > _REMEMBERED:
            del self._unsure[next(iter(self._unsure))]

    def _now(self) -> float:
        # The ledger's clock is the store's on a durable store, the wall clock in memory.
        return now_of(self.handler) if self.handler.durable else time.time()

    def _remember(self, name: str) -> None:
        self._recorded[name] = None
        if len(self._recorded) > _REMEMBERED:
            del self._recorded[next(iter(self._recorded))]

    @staticmethod
    def _failed(pending_id: str, surface: str, error: BaseException) -> None:
        logger.warning(
            "Could not record that %s showed %s: %s",
            surface,
            pending_id,
            error,
            extra={"event": "shown_failed", "pending_id": pending_id, "surface": surface},
        )

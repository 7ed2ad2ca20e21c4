"""A request's ``shown`` entries: one per surface that put it in front of a person.

Every surface that shows an open request to a person records it in the request's history
through :class:`ShownTrail`: the desk's HTTP API (``desk``), its WebSocket (``websocket``)
and each notification surface (by its name). A request gets one ``shown`` entry per
surface, naming the first person it was shown to there (of those shown it at the same
instant, one), however often and to however many people that surface shows it again, and
whichever process shows it.

The history is what says whether a surface showed the request: an entry is appended only
after a read of the history that lacks it, as that history's next entry
(:meth:`~roomkit.tools.human_input.HumanInputHandler.record_at`, one check-and-set on the
history's length); an append that finds the history grown reads it again. Processes showing
a request at once so write its entry once (on the memory, SQLite, Redis and PostgreSQL
stores; a store of the application's own without that check-and-set has ``record_at`` read
before it appends). The handler's spend ledger
(:attr:`~roomkit.tools.human_input.HumanInputHandler.ledger`), shared by every process on a
durable store, spares the read: ``notify:shown:{id}:{surface}`` is spent once the entry is
known to be in the history, and a showing that finds it spent reads nothing more (the
ledger keeps it :data:`SHOWN_KEEP`; a request still open a week later has its history read
again, and the entry is not written twice). A settled request is shown no more: the
surfaces pass only the open requests they show, so a ``shown`` entry follows the
``settled`` one only when the request settled in the instant it was being shown, or while
a notification surface was still delivering the notice that showed it.

No crash point loses the entry: a process killed before its append lands has spent no mark,
so the next showing, in any process, writes it; one killed after the append and before the
spend leaves the next showing to find the entry and spend the mark. Recording never fails
the surface: a store that cannot be reached, or that refuses the entry, is logged, and the
next showing tries again. An append the store did not see through (unreachable, or cut by
its timeout) may still land once the store answers; it is a check-and-set on the length its
process read, so it lands only if nothing was appended since, and a later append from that
length then fails and reads the history again. A surface cut off while it records (a socket
closed, a request cancelled) does not cut the recording: the entry is written all the same,
and :meth:`ShownTrail.idle` waits for such writes (a surface shutting down).

The trail remembers what this process recorded already, so that a listing shown again
costs no round trip; what it does not know is read from the ledger in one read, the history
is read only for the requests whose mark is not spent, and their entries are written
concurrently, a few at a time.

What counts as shown is each surface's to say (the desk's is in :mod:`roomkit.desk.hub`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Iterable

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
_TRIES = 8
"""Appends a trail tries for one entry while the history keeps growing under it (then the
next showing tries again)."""


class ShownTrail:
    """Writes the ``shown`` entries of one handler's requests, once per surface.

    Args:
        handler: the handler whose requests are shown.
    """

    def __init__(self, handler: HumanInputHandler) -> None:
        self.handler = handler
        self._recorded: dict[str, None] = {}
        self._writing: dict[str, asyncio.Task[bool]] = {}
        self._showing: set[asyncio.Task[int]] = set()

    async def idle(self) -> None:
        """Return once the entries being written (some for surfaces cut off) are written."""
        while self._writing or self._showing:
            await asyncio.wait({*self._writing.values(), *self._showing})

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
        # Carried on if the caller is cancelled meanwhile: the person saw the requests.
        task = asyncio.ensure_future(self._record_fresh(names, fresh, surface, actor))
        self._showing.add(task)
        task.add_done_callback(self._showing.discard)
        return await asyncio.shield(task)

    async def _record_fresh(
        self, names: dict[str, str], fresh: list[str], surface: str, actor: str | None
    ) -> int:
        """:meth:`record` of the marks ``fresh`` of ``names`` this trail does not remember."""
        spent: Collection[str]
        try:
            spent = await self.handler.ledger.read_spent(fresh)
        except Exception as error:
            logger.warning(
                "Could not read which requests %s showed already: %s",
                surface,
                error,
                extra={"event": "shown_failed", "surface": surface},
            )
            return 0
        for name in spent:
            self._remember(name)
        new = [name for name in fresh if name not in spent]
        written = 0
        for start in range(0, len(new), _WRITES):
            batch = new[start : start + _WRITES]
            done = await asyncio.gather(
                *(self._write(name, names[name], surface, actor) for name in batch)
            )
            written += sum(done)
        return written

    async def _write(self, name: str, pending_id: str, surface: str, actor: str | None) -> bool:
        """:meth:`_record`, carried on if the caller is cancelled meanwhile; a showing while
        this trail writes the entry waits for that write."""
        task = self._writing.get(name)
        if task is not None:
            await asyncio.shield(task)
            return False
        task = asyncio.ensure_future(self._record(name, pending_id, surface, actor))
        self._writing[name] = task
        task.add_done_callback(lambda _: self._writing.pop(name, None))
        return await asyncio.shield(task)

    async def _record(self, name: str, pending_id: str, surface: str, actor: str | None) -> bool:
        """Append the entry unless the request's history holds it, then spend ``name``;
        whether this call appended it."""
        try:
            appended = await self._append_unless_there(pending_id, surface, actor)
        except Exception as error:
            self._failed(pending_id, surface, error)
            return False
        if appended is None:
            return False
        self._remember(name)
        try:
            await self.handler.ledger.spend_once(name, until=self._now() + SHOWN_KEEP)
        except Exception as error:
            # The entry is there: a showing elsewhere reads the history and finds it.
            self._failed(pending_id, surface, error)
        return appended

    async def _append_unless_there(
        self, pending_id: str, surface: str, actor: str | None
    ) -> bool | None:
        """Append the entry as the next of a history that lacks it: ``True`` once appended,
        ``False`` when the history holds it, ``None`` when it kept growing meanwhile (the
        next showing tries again)."""
        entry = new_entry("shown", actor=actor, surface=surface)
        for _ in range(_TRIES):
            history = await self.handler.history(pending_id)
            if any(e.get("type") == "shown" and e.get("surface") == surface for e in history):
                return False
            # Refused when anything was appended since the read: read it again.
            if await self.handler.record_at(pending_id, entry, seq=len(history), open_only=False):
                return True
        return None

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

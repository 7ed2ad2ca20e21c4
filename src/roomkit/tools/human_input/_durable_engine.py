"""The durable engine: requests in a store shared by processes (SQLite, Redis).

Every read and every settle is a round trip, and the settle's check-and-set runs in the
store, so one outcome wins across every process. The waits of this process are
:class:`DurableWaits`: one sweeper reads the requests a change hint names. Settling is
asynchronous only: the synchronous ``resolve()`` / ``reject()`` / ``release()`` raise
:class:`AsyncSettleRequiredError` naming the call to make.

A request created here with a ``key`` outlives a wait that was cut and a handler that
closed: the process that re-attaches to it by key gets the answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, cast

from roomkit.core.exceptions import AsyncSettleRequiredError, StoreError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import Ballot, HistoryLog, Judgement, asked_entry
from roomkit.stores.base import (
    ChangeListener,
    DurableSettledHistory,
    DurableStore,
    InsertsSettled,
    PlainSettle,
    SpendLedger,
    VotingStore,
)
from roomkit.stores.grants import (
    GrantedHistory,
    GrantedInsert,
    InsertsGranted,
    InsertsUngranted,
    SettlesGranting,
)
from roomkit.tools.human_input._announce import Announcer
from roomkit.tools.human_input._checks import outcome
from roomkit.tools.human_input._durable import DurableWaits
from roomkit.tools.human_input._granting import (
    GrantsOnTool,
    inserts_ungranted,
    looking_for_grants,
)
from roomkit.tools.human_input._in_transaction import Settlement, in_transaction
from roomkit.tools.human_input._withdrawing import timed_out
from roomkit.tools.human_input.statistics import HandlerStatistics

if TYPE_CHECKING:
    from roomkit.tools.human_input._answering import Answer

__all__ = ["DurableEngine"]

logger = logging.getLogger("roomkit.tools.human_input")

_ASYNC_ONLY = (
    "{method}() cannot settle a request on a durable store, where the outcome is a round "
    "trip: use `await handler.a{method}(...)`"
)

Reattaching = Callable[[PendingInput], Awaitable[PendingInput]]
"""Brings an open request a create re-attaches to up to date (see :meth:`DurableEngine.create`)."""

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_TIMED_OUT = PendingInputStatus.TIMED_OUT
_SEEN = 1024
"""The most requests read here whose kind and answer schema the engine remembers."""


class DurableEngine:
    """Requests in a durable store; this process's waits woken by its change feed."""

    __slots__ = ("_announcer", "_plain", "_seen", "_waits", "inserts_settled", "store")

    durable = True

    def __init__(self, store: DurableStore, announcer: Announcer) -> None:
        if not isinstance(store, SpendLedger):
            logger.warning(
                "%s keeps no spend-once ledger: single-use links and revocations hold "
                "in this process only",
                type(store).__name__,
            )
        self.store = store
        self._announcer = announcer
        self._waits = DurableWaits(store, announcer.is_closed_for)
        self._seen: OrderedDict[str, PendingInput] = OrderedDict()
        # Decided once: an isinstance against a protocol costs tens of microseconds.
        self._plain = store if isinstance(store, PlainSettle) else None
        self.inserts_settled = isinstance(store, InsertsSettled)
        """Whether the store inserts a request settled as it is made, in one write
        (:meth:`create_settled`)."""

    # -- creating ----------------------------------------------------------------------------

    async def create(
        self,
        request: PendingInput,
        timeout: float | None,
        history: tuple[dict[str, Any], ...] | None,
        *,
        announce: bool = True,
        reattaching: Reattaching | None = None,
    ) -> PendingInput:
        """Insert ``request`` (or re-attach to the one its key names) and announce it
        (unless ``announce`` is false: nobody is to be asked);
        ``history`` starts its history in the insert's own write when it is created
        (``None``: a question's ``created`` entry). ``reattaching`` is given the open
        request a key re-attaches to, made by a process that stopped, before it is
        announced, and returns it as it is to be read (settled, maybe: then it is owed
        no announcement)."""
        store, waits = self.store, self._waits
        if history is None:
            history = (asked_entry(request),)
        looks = await self._before_insert(request, timeout)
        if looking_for_grants() and inserts_ungranted(store):
            inserted = await cast(InsertsUngranted, store).insert_ungranted(
                request, history=history
            )
            if inserted is None:
                raise GrantsOnTool(request.tool_name)
            record, created = inserted
        else:
            record, created = await store.insert(request, history=history)
        # A request created here and not collected yet is being announced already.
        owed = not created and record.pending_id not in waits.local
        self._hold(record, looks, created)
        if owed and reattaching is not None and record.status is _PENDING:
            record = await reattaching(record)
        if announce and (created or (owed and record.status is _PENDING)):
            self._announcer.announce_stored(store, record, owed=owed)
        return record

    async def create_settled(
        self,
        request: PendingInput,
        timeout: float | None,
        history: tuple[dict[str, Any], ...],
        settlement: Settlement,
    ) -> PendingInput:
        """Insert ``request`` settled as ``settlement`` says (a call decided without anyone),
        ``history`` then the settlement's entries all of its history, in one write
        (:class:`~roomkit.stores.base.InsertsSettled`), or find the request its key names
        (it may still be open). Nothing is announced; the record is held here as
        :meth:`create` holds it, for the wait that collects it."""
        looks = await self._before_insert(request, timeout)
        record, created = await cast(InsertsSettled, self.store).insert_settled(
            settlement.made(request), history=(*history, *settlement.history)
        )
        self._hold(record, looks, created)
        return record

    async def create_granted(
        self,
        request: PendingInput,
        timeout: float | None,
        grant_id: str,
        history: GrantedHistory,
    ) -> GrantedInsert | None:
        """Insert the approval ``request`` that the grant ``grant_id`` covers, unannounced,
        its use counted in the insert's own write (the store's
        :class:`~roomkit.stores.grants.InsertsGranted`), or re-attach to the request its key
        names (no use spent); ``None`` when the grant covers nothing now."""
        looks = await self._before_insert(request, timeout)
        inserting = cast(InsertsGranted, self.store)
        inserted = await inserting.insert_granted(request, grant_id, history=history)
        if inserted is not None:
            self._hold(inserted.record, looks, inserted.created)
        return inserted

    async def _before_insert(self, request: PendingInput, timeout: float | None) -> int | None:
        """Make ready for the insert of ``request``: its deadline on the store's clock, the
        requests held here reviewed when due; the looks begun before the insert."""
        waits = self._waits
        if waits.mine.review_due():  # before the insert: a cut here has created nothing
            await waits.forget_settled()
        if timeout is not None:
            request.deadline = self.store.clock() + timeout
        return waits.sweeper.looks_before_insert()

    def _hold(self, record: PendingInput, looks: int | None, created: bool) -> None:
        """Hold ``record`` as its insert returned it, for the wait that collects it; one
        created settled (as it was made) is handed over at once: its wait reads nothing."""
        self._waits.mine.hold(record, looks)
        if created and record.status is not _PENDING:
            self._waits.settled(record)

    # -- waiting -----------------------------------------------------------------------------

    def listen(self, pending_id: str, timeout: float | None) -> Awaitable[PendingInput]:
        return self._waits.wait(pending_id, timeout)

    def collect(self, record: PendingInput) -> str:
        return outcome(record)

    async def abandon(self, pending_id: str) -> None:
        """A wait was cut: withdraw its request, unless a key lets someone re-attach to it.

        A keyed request outlives the wait that was cut (a turn cancelled, a process shutting
        down): whoever re-attaches to it by key gets the answer. A withdrawal the store cannot
        take now (it is unreachable) is logged, and the cut still ends the wait as a cut: the
        request stays open until its deadline or an answer.
        """
        request = self._waits.local.get(pending_id)
        if request is None or request.key is None:
            try:
                await asyncio.shield(self.arelease(pending_id))
            except StoreError as error:
                logger.warning(
                    "Pending %s could not be withdrawn as its wait was cut (%s); it stays open "
                    "until its deadline or an answer",
                    pending_id,
                    error,
                )

    # -- settling ----------------------------------------------------------------------------

    def resolve(self, pending_id: str, result: str) -> bool:
        raise AsyncSettleRequiredError(_ASYNC_ONLY.format(method="resolve"))

    def reject(self, pending_id: str, reason: str) -> bool:
        raise AsyncSettleRequiredError(_ASYNC_ONLY.format(method="reject"))

    def release(self, pending_id: str) -> bool:
        raise AsyncSettleRequiredError(_ASYNC_ONLY.format(method="release"))

    async def arelease(self, pending_id: str, reason: str | None = None) -> bool:
        return await self._waits.release(pending_id, reason)

    async def settle(self, settlement: Settlement) -> bool:
        """Run ``settlement``; its history goes into the request's history in the settle's
        own transaction (and its grant, on a store that records one there)."""
        store, grant = self.store, settlement.grant
        if grant is not None and isinstance(store, SettlesGranting):
            record = await store.settle_granting(
                grant,
                settlement.pending_id,
                settlement.status,
                history=settlement.history,
                **settlement.outcome,
            )
        else:
            record = await store.settle(
                settlement.pending_id,
                settlement.status,
                history=settlement.history,
                **settlement.outcome,
            )
        if record is None:
            return False
        self._waits.settled(record)
        return True

    async def answer(self, answer: Answer, connection: Any) -> bool:
        """Settle ``answer`` (``aresolve``); ``True`` if it won.

        A request created here is checked against the copy held here; one known nowhere
        here is settled plain, on a store that can (:class:`PlainSettle`: the settle leaves
        alone a request whose answer needs a check, and hands it back as it stands), or,
        when read here lately, checked against that copy (its kind and schema never
        change) before its check-and-set; otherwise it is read first. ``connection``: the
        caller's transaction, which the settle joins (a :class:`TypeError` when the store
        cannot).
        """
        pending_id = answer.pending_id
        request = self._waits.local.get(pending_id)
        if request is None and connection is None:
            seen = self._seen.get(pending_id)
            if seen is None or answer.is_plain(seen):
                plain = await self._resolve_plain(pending_id, answer)
                if plain is not None:
                    won, request = plain
                    return won or await answer.decide(request, self.settle)
            elif answer.fits(seen):
                settled = await self.settle(answer.settlement)
                return await answer.won(settled)
        if request is None:
            request = await self.get_request(pending_id)
        if connection is None:
            return await answer.decide(request, self.settle)
        return await answer.decide(request, in_transaction(self.store, request, connection))

    async def _resolve_plain(
        self, pending_id: str, answer: Answer
    ) -> tuple[bool, PendingInput | None] | None:
        """Resolve in one check-and-set that leaves a request whose answer needs checking
        alone, on a store that can (:class:`PlainSettle`); else ``None`` (read first).

        Returns whether this call won, and the request as it then stands (``None``: not
        stored); a pending one needs its answer checked before it is settled.
        """
        store = self._plain
        if store is None:
            return None
        won, stored = await store.settle_plain(
            pending_id, answer.result, settled_by=answer.by, history=answer.history
        )
        if won is None:
            return False, stored
        self._waits.settled(won)
        return True, won

    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any]
    ) -> bool:
        """Add ``actors`` to the approvers of the open request, in the store, with ``entry``
        appended to its history in the same write."""
        store = self.store
        if not isinstance(store, HistoryLog):
            raise TypeError(f"{type(store).__name__} keeps no approvers: it is no HistoryLog")
        record = await store.add_approvers(pending_id, actors, entry)
        if record is None:
            return False
        local = self._waits.local
        if pending_id in local:
            local[pending_id] = record
        return True

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """Record ``ballot`` with the store's one vote operation (which settles the request
        when the vote decides it, and writes the vote's history entries with it)."""
        store = self.store
        if not isinstance(store, VotingStore):
            raise TypeError(f"{type(store).__name__} records no votes: it is no VotingStore")
        judgement = await store.vote(pending_id, ballot)
        record = judgement.record
        if record is not None and judgement.write:
            local = self._waits.local
            if pending_id in local:
                local[pending_id] = record
            if record.status is not _PENDING:
                self._waits.settled(record)
        return judgement

    async def time_out(self, request: PendingInput) -> PendingInput | None:
        """Record the timeout of ``request``, past its deadline; the record as it stands."""
        won = await self.store.settle(request.pending_id, _TIMED_OUT, history=timed_out())
        if won is None:
            return await self.store.fetch(request.pending_id)
        self._waits.settled(won)
        return won

    async def close(self, channel_id: str | None) -> None:
        await self._waits.close(channel_id)

    # -- reading -----------------------------------------------------------------------------

    def local(self, pending_id: str) -> PendingInput | None:
        """The request as this process created it (its schema), read without a round trip."""
        return self._waits.local.get(pending_id)

    async def get_request(self, pending_id: str) -> PendingInput | None:
        record = await self.store.fetch(pending_id)
        if record is not None:
            seen = self._seen
            seen[pending_id] = record
            seen.move_to_end(pending_id)
            if len(seen) > _SEEN:
                seen.popitem(last=False)
        return record

    async def list_pending(
        self, room_id: str | None, actor_id: str | None, channel_id: str | None
    ) -> list[PendingInput]:
        return await self.store.list_pending(
            room_id=room_id, actor_id=actor_id, channel_id=channel_id
        )

    async def list_settled(
        self, actor_ids: Collection[str | None] | None, limit: int
    ) -> list[PendingInput]:
        store = self.store
        if isinstance(store, DurableSettledHistory):
            return await store.list_settled(actor_ids=actor_ids, limit=limit)
        return []

    def clock(self) -> float:
        """The clock deadlines are set on: the store's."""
        return self.store.clock()

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        return self._waits.subscribe(listener)

    def pending(self) -> dict[str, PendingInput]:
        return dict(self._waits.local)

    def statistics(self, notifications: int) -> HandlerStatistics:
        waits = self._waits
        # The sweeper task, not a loop timer, watches the deadlines here.
        return HandlerStatistics(
            len(waits.local),
            # A wait riding out an outage before it parked is blocked here too.
            waits.parked + waits.outage.riding,
            waits.deadlines,
            notifications,
            backstop_looks=waits.sweeper.looks,
            records_read=waits.sweeper.reads,
            rereads=waits.sweeper.rereads,
        )

"""The reading side of :class:`~roomkit.tools.human_input.HumanInputHandler`.

What a handler tells about its requests without asking anyone anything: a request, the open
ones, the recent outcomes, a request's history (and the entries surfaces add to it), the
changes as they happen, and the collaborators kept beside the requests (the store, its
audit trail, the spend-once ledger, the notification outbox). :class:`HandlerReads` holds
the handler's collaborators, which the handler builds, and answers from them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import suppress
from typing import Any

from roomkit.core.exceptions import HumanInputRejectedError, HumanInputTimeoutError
from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.models.history import Entry
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import (
    AfterSettleHistory,
    GuardedHistory,
    NoticedHistory,
    PendingStore,
    StoreTrail,
    check_entry,
)
from roomkit.stores.base import ChangeListener, DurableStore, SpendLedger, check_settled_listing
from roomkit.stores.outbox import Outbox, OutboxItem
from roomkit.tools.human_input._announce import Announcer
from roomkit.tools.human_input._checks import check_by, check_surface, check_timeout
from roomkit.tools.human_input._deadlines import expire_overdue
from roomkit.tools.human_input._decisions import Decisions
from roomkit.tools.human_input._durable_engine import DurableEngine
from roomkit.tools.human_input._ids import check_id
from roomkit.tools.human_input._memory_engine import MemoryEngine
from roomkit.tools.human_input.statistics import HandlerStatistics

__all__ = ["HandlerReads"]


def _checked_notices(notices: Sequence[OutboxItem]) -> tuple[OutboxItem, ...]:
    """``notices`` as a tuple, each an outbox item whose body is JSON-ready.

    Raises:
        TypeError: ``notices`` is a string or a single item, or holds something else.
    """
    if isinstance(notices, str | OutboxItem) or not isinstance(notices, Sequence):
        raise TypeError(f"notices is a sequence of OutboxItem: got {notices!r}")
    for notice in notices:
        if not isinstance(notice, OutboxItem):
            raise TypeError(f"notices holds OutboxItem only: got {notice!r}")
        notice.encoded_body()  # not JSON-ready: the TypeError comes before any write
    return tuple(notices)


class HandlerReads:
    """Requests, histories and changes as the handler's engine and store hold them.

    Args:
        engine: the engine the handler hands its requests to.
        decisions: the handler's approvals and histories.
        announcer: the handler's channel scopes and notifications.
        trail: the histories' signed heads and checkpoints, if kept.
        ledger: the spend-once ledger beside the requests.
        outbox: the notification outbox beside the requests.
    """

    def __init__(
        self,
        engine: MemoryEngine | DurableEngine,
        decisions: Decisions,
        announcer: Announcer,
        trail: StoreTrail | None,
        ledger: SpendLedger,
        outbox: Outbox,
    ) -> None:
        self._engine = engine
        self._decisions = decisions
        self._announcer = announcer
        self._trail = trail
        self._ledger = ledger
        self._outbox = outbox

    # -- history -----------------------------------------------------------------------------

    async def history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first: each entry a dict with ``type`` (``created``,
        ``shown``, ``voted``, ``decided``, ``settled``, ``executed``, ``escalated``),
        ``at`` (ISO-8601 UTC), ``actor``, ``surface``, ``seq`` and the type's own fields.

        On a durable store it is the store's, shared by every process; otherwise it lives
        in this process while the store knows the request (open, or its outcome retained),
        and a request it no longer knows has an empty history.

        Raises:
            CorruptRecordError: the store holds an entry of the request's history that no
                store writes (bytes that are not UTF-8, text that is no JSON object: a
                damaged disk, or another hand with write access); the error names the
                entry, and ``roomkit audit verify`` names what breaks the trail.
            StoreError: the store cannot be read.
        """
        check_id("pending_id", pending_id)
        return await self._decisions.history(pending_id)

    async def record(self, pending_id: str, entry: dict[str, Any] | Entry) -> int:
        """Append ``entry`` to the request's history (e.g. a surface's ``shown``); its seq.

        ``entry`` is a dict, or a typed entry of :mod:`roomkit.models.history`
        (``Shown(actor="ann", surface="desk")``).

        Raises:
            TypeError, ValueError: ``entry`` is no history entry (it needs ``type`` and
                ``at``; ``roomkit.stores.new_entry`` makes one); or its
                ``actor`` or ``surface`` is longer than
                :data:`~roomkit.models.json_limits.MAX_ID_CHARS` (256) characters, as
                ``by`` and ``surface`` of a settle are. Nothing was stored.
            InvalidTextError: a text in ``entry`` holds a lone surrogate.
            UnknownRequestError: on the memory store, the request's history is gone (its
                outcome left the retention).
        """
        check_id("pending_id", pending_id)
        checked = check_entry(entry)
        check_by(checked["actor"], name="actor")
        check_surface(checked["surface"])
        return await self._decisions.record(pending_id, checked)

    async def record_at(
        self,
        pending_id: str,
        entry: dict[str, Any] | Entry,
        *,
        seq: int,
        notices: Sequence[OutboxItem] = (),
        open_only: bool = True,
    ) -> bool:
        """Append ``entry`` to the open request's history as its entry ``seq`` (the length
        of the history a caller read and decided ``entry`` from), in one check-and-set;
        ``False``, with nothing written, when the request is no longer open or its history
        grew meanwhile (read it again). Two processes deciding the same entry from the same
        history (a routing assignment) so write it once, and never after the settle.

        Args:
            notices: items of :attr:`outbox` the entry owes people (a reassignment's notice
                to its new person), added only when the entry is: in the same write on a
                store that keeps the outbox beside the histories (SQLite, Redis,
                PostgreSQL), so that a process dying between the two loses no notice;
                just after it on any other store.
            open_only: ``False`` appends to a settled request's history too (an entry owed
                once after the settle, as a ladder's default); ``notices`` are then added
                just after the entry, on every store.

        Raises:
            TypeError, ValueError, InvalidTextError: as :meth:`record`; or ``seq`` is no
                int, or below 0; or ``notices`` holds something other than an
                :class:`~roomkit.stores.outbox.OutboxItem`, or one whose body is not
                JSON-ready. Nothing was stored.
        """
        check_id("pending_id", pending_id)
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise TypeError(f"seq is the length of the history read, an int: got {seq!r}")
        if seq < 0:
            raise ValueError(f"seq is the length of the history read, 0 or more: got {seq}")
        checked = check_entry(entry)
        check_by(checked["actor"], name="actor")
        check_surface(checked["surface"])
        owed = _checked_notices(notices)
        log = self._decisions.log
        # One write where the outbox is the store's own, beside the histories.
        beside = getattr(log, "outbox", None) is self._outbox
        if owed and beside and open_only and isinstance(log, NoticedHistory):
            return await log.append_history_noticed(pending_id, checked, seq, owed)
        if not await self._append_at(pending_id, checked, seq, open_only):
            return False
        if owed:
            await self._outbox.add(owed)
        return True

    async def _append_at(
        self, pending_id: str, entry: dict[str, Any], seq: int, open_only: bool
    ) -> bool:
        log = self._decisions.log
        if open_only and isinstance(log, GuardedHistory):
            return await log.append_history_at(pending_id, entry, seq)
        if not open_only and isinstance(log, AfterSettleHistory):
            return await log.append_history_after(pending_id, entry, seq)
        # A log of the application's own store: the checks read first, and a write in
        # another process may come between them and the append.
        if open_only:
            request = await self._engine.get_request(pending_id)
            if request is None or request.status is not PendingInputStatus.PENDING:
                return False
        if len(await log.read_history(pending_id)) != seq:
            return False
        await log.append_history(pending_id, entry)
        return True

    # -- reading -----------------------------------------------------------------------------

    async def get_request(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled (within retention), or ``None``."""
        check_id("pending_id", pending_id)
        return await self._engine.get_request(pending_id)

    async def wait_settled(self, pending_id: str, *, timeout: float | None = 300) -> PendingInput:
        """:meth:`wait`, for the settled request itself rather than its answer.

        A person's refusal and an expiry come back as the request (its status, its answer or
        reason, and who settled it in ``settled_by``) instead of an error: what a caller
        that needs more than the answer would otherwise read with :meth:`get_request`
        after the wait, without that read.

        Raises:
            RequestWithdrawnError: as :meth:`wait` (the handler gave the request up).
            UnknownRequestError: as :meth:`wait`.
        """
        if type(timeout) is not int or not 0 <= timeout <= LONGEST_TIMEOUT:
            check_timeout(timeout)
        check_id("pending_id", pending_id)
        engine = self._engine
        try:
            settled = await engine.listen(pending_id, timeout)
        except asyncio.CancelledError:
            # As in wait(): the waiting call was cut, so a late answer is refused.
            await engine.abandon(pending_id)
            raise
        # A refusal or an expiry: the request says which, and who refused it.
        with suppress(HumanInputRejectedError, HumanInputTimeoutError):
            engine.collect(settled)
        return settled

    async def list_pending(
        self,
        *,
        room_id: str | None = None,
        actor_id: str | None = None,
        channel_id: str | None = None,
    ) -> list[PendingInput]:
        """The requests still waiting for an answer, oldest first; ``None`` filters nothing.

        On a durable store this lists every process's requests.
        """
        return await self._engine.list_pending(room_id, actor_id, channel_id)

    def time_left(self, request: PendingInput) -> float | None:
        """Seconds until ``request``'s deadline (negative once past), ``None`` without one.

        Measured on the clock the deadline is set on: the store's, on a durable store.
        """
        if request.deadline is None:
            return None
        return request.deadline - self._engine.clock()

    async def expire_overdue(self, requests: Iterable[PendingInput]) -> list[PendingInput]:
        """``requests`` as they stand once those past their deadline have timed out.

        The process that waits on a request records its timeout; when none waits any more
        (its agent stopped), a list would show it open for ever. Each pending request past
        its deadline is settled ``TIMED_OUT`` here, through the same check-and-set as an
        answer. Requests that left the store are dropped.
        """
        return await expire_overdue(self._engine, requests)

    @property
    def store(self) -> PendingStore | DurableStore:
        """Where the requests live; the notification outbox is kept beside them."""
        return self._engine.store

    @property
    def audit_trail(self) -> StoreTrail | None:
        """The histories' signed heads and checkpoints (``ROOMKIT_AUDIT_KEY``): the durable
        store's, or those this handler keeps in memory; ``None`` for a store without them."""
        return self._trail

    @property
    def ledger(self) -> SpendLedger:
        """The spend-once ledger beside the requests: single-use links, revoked tokens.

        On a durable store it is the store's own, shared by every process on it; on the
        memory store it lives in this process.
        """
        return self._ledger

    @property
    def outbox(self) -> Outbox:
        """The notification outbox beside the requests: on a durable store the store's own
        (``store.outbox``), shared by every process on it; on the memory store, in memory."""
        return self._outbox

    async def list_settled(
        self, *, actor_ids: Collection[str | None] | None = None, limit: int = 50
    ) -> list[PendingInput]:
        """Recent outcomes, newest first: the store's ``list_settled``, for any store.

        ``actor_ids`` and ``limit`` are checked as the stores check them (``limit`` from 1
        to 200; ``None`` among the actors for requests naming none). On a durable store this
        is every process's outcomes within the retention; on the memory store, the last
        ``retention`` outcomes; a store that keeps no history lists nothing.
        """
        check_settled_listing(actor_ids, limit)
        return await self._engine.list_settled(actor_ids, limit)

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener(change)`` when a request is created or settles; returns the undo.

        Changes are hints (:class:`PendingChange`): re-read the request with
        :meth:`get_request`. On a durable store they come from every process sharing it, may
        repeat, and a ``RESYNC`` says some may have been missed.
        """
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {listener!r}")
        return self._engine.subscribe(listener)

    @property
    def durable(self) -> bool:
        """True when requests live in a durable store shared by processes."""
        return self._engine.durable

    @property
    def pending(self) -> dict[str, PendingInput]:
        """A snapshot of the active requests, by id.

        A request answered but not yet collected by its ``wait()`` is still listed, with its
        new status, until ``wait()`` or ``release()`` retires it.
        """
        return self._engine.pending()

    def statistics(self) -> HandlerStatistics:
        """This process's figures: requests held, waits parked, deadlines, notifications."""
        return self._engine.statistics(len(self._announcer.tasks))

    @property
    def closed(self) -> bool:
        """True once ``close()`` without a channel id was called."""
        return self._announcer.closed

    def is_closed_for(self, channel_id: str) -> bool:
        """True when creates for ``channel_id`` are refused."""
        check_id("channel_id", channel_id)
        return self._announcer.is_closed_for(channel_id)

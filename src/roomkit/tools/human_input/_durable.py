"""The handler's side of a durable store: waits that any process's answer can end.

A wait parks on a watch of its request, and the waits of this process share one sweeper task
(:mod:`._durable_sweeper`) that reads the requests a change hint or a backstop look names and
hands each settled one to its watch. The deadline is the store's: whichever process sees it
pass first records the timeout through the same check-and-set as an answer; this process's
deadlines share one timer, the sweeper's. An outage is retried with a short backoff; the
waits carry on when the store is back. A wait that finds the store away before it parks (its
first read, its deadline's write) waits for it too, its deadline counted from the call
(:mod:`._durable_outage`).

Handing an answer to its wait costs the same however many waits are parked: the sweeper
carries one done callback, which tells each wait's watch that it ended (the waits never
register on the shared task themselves); the figures of :attr:`DurableWaits.parked` and
:attr:`DurableWaits.deadlines` are counters; and the nearest deadline comes from a heap
(:class:`~roomkit.tools.human_input._durable_watch.Deadlines`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

from roomkit.core.exceptions import HandlerClosedError, StoreError, UnknownRequestError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.base import DurableStore, PendingChange, PendingChangeKind
from roomkit.tools.human_input._announce import emit, listen_to
from roomkit.tools.human_input._durable_local import LocalRequests
from roomkit.tools.human_input._durable_outage import Outage
from roomkit.tools.human_input._durable_sweeper import Sweeper
from roomkit.tools.human_input._durable_watch import Deadlines, Watch
from roomkit.tools.human_input._withdrawing import (
    HANDLER_CLOSED,
    handler_closed,
    release,
    withdraw_created,
)

__all__ = ["DurableWaits"]

logger = logging.getLogger("roomkit.tools.human_input")

_PENDING = PendingInputStatus.PENDING


class DurableWaits:
    """The requests this process waits on, woken by the store's change feed."""

    def __init__(self, store: DurableStore, is_closed_for: Callable[[str], bool]) -> None:
        self.store = store
        self._is_closed_for = is_closed_for
        self.mine = LocalRequests()
        """Requests created here, with what their waits know of them without a read."""
        self.local = self.mine.records
        """Requests created here and not yet collected by a wait (for close and ``pending``)."""
        self._waiters: dict[str, Watch] = {}
        self._listeners: list[Callable[[PendingChange], None]] = []
        self._unsubscribe: Callable[[], None] | None = None
        self.parked = 0
        """How many ``wait()`` calls are parked here."""
        self.outage = Outage(store.backstop_interval, self._closed_error)
        """The waits that found the store unreachable before they parked, and its probe."""
        self._deadlines = Deadlines()
        self.sweeper = Sweeper(store, self._waiters, self._deadlines, self.settled)
        """The one task that reads what the waits are on, with its figures."""

    @property
    def deadlines(self) -> int:
        """How many of the waited requests have a deadline this process watches."""
        return self._deadlines.armed

    # -- the change feed ---------------------------------------------------------------------

    def subscribe(self, listener: Callable[[PendingChange], None]) -> Callable[[], None]:
        unsubscribe = listen_to(self._listeners, listener)
        self._feed()
        return unsubscribe

    def _feed(self) -> None:
        if self._unsubscribe is None:
            self._unsubscribe = self.store.subscribe(self._on_change)

    def _on_change(self, change: PendingChange) -> None:
        if change.kind is PendingChangeKind.RESYNC:
            self.mine.resync()
            self._mark(None)
        elif change.kind is not PendingChangeKind.CREATED:
            self.mine.changed(change.pending_id)
        if change.kind is PendingChangeKind.SETTLED:
            record = change.record
            if record is not None and record.status is not _PENDING:
                self.settled(record)
            else:
                self._mark(change.pending_id)
        emit(self._listeners, change)

    def stop(self) -> None:
        """Leave the change feed; waits still open here end with HandlerClosedError."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._listeners.clear()
        for watch in self._waiters.values():
            watch.fail(HandlerClosedError(HANDLER_CLOSED))
        self.outage.close(handler_closed)

    def _closed_error(self, channel_id: str) -> Callable[[], Exception] | None:
        """What ends a wait on a request of ``channel_id`` rather than parks it, if any."""
        return handler_closed if self._is_closed_for(channel_id) else None

    # -- withdrawing -------------------------------------------------------------------------

    async def release(self, pending_id: str, reason: str | None = None) -> bool:
        """Withdraw the request if still unanswered, saying ``reason``; ``True`` if this
        call withdrew it."""
        return await release(self, pending_id, reason)

    async def close(self, channel_id: str | None) -> None:
        """Withdraw the unkeyed requests created here (for ``channel_id``, or all).

        Keyed requests stay open in the store for whoever re-attaches to them; their waiters
        here wake and raise :class:`HandlerClosedError`, as do the waits on a request created
        here of the channel that still wait for an unreachable store to read it.
        """
        if channel_id is not None:
            # Before the withdrawals, which wait for the store that keeps these waits away.
            self.outage.close_channel(channel_id)
        await withdraw_created(self, channel_id)
        for watch in list(self._waiters.values()):
            if channel_id is None or watch.record.channel_id == channel_id:
                watch.fail(HandlerClosedError(HANDLER_CLOSED))
        if channel_id is None:
            self.stop()

    async def forget_settled(self) -> None:
        """Forget the requests created here that no wait is on and that have settled, or
        left the store, since: a wait that comes for one of them reads it.

        Run when the requests held here have doubled since the last time
        (:meth:`~roomkit.tools.human_input._durable_local.LocalRequests.review_due`): a
        process that creates requests no wait collects (detached ones, or approvals whose
        answers reach a workflow) holds only those still open. A store error leaves them
        held until the next time; it is logged, and raises nothing.
        """
        mine = self.mine
        unwaited = [pending_id for pending_id in mine.records if pending_id not in self._waiters]
        mine.reviewed()  # before the read: a create meanwhile starts no second look
        try:
            stored = await self.store.fetch_many(unwaited)
        except StoreError as error:
            logger.warning(
                "Could not look up the %d requests created here that no wait is on (%s); "
                "they stay held until the next look",
                len(unwaited),
                error,
            )
            return
        still_open = {record.pending_id for record in stored if record.status is _PENDING}
        for pending_id in unwaited:
            if pending_id not in still_open and pending_id not in self._waiters:
                mine.drop(pending_id)
        mine.reviewed()

    # -- waiting -----------------------------------------------------------------------------

    async def wait(self, pending_id: str, timeout: float | None) -> PendingInput:
        """Block until the stored request settles; return the settled record.

        Raises:
            UnknownRequestError: no such request (never created, or past its retention).
            HandlerClosedError: this handler (or the request's channel) closed while the
                request stays open in the store (a keyed request, kept for the process that
                re-attaches to it), or while the store was unreachable before the wait could
                read it (a close of the channel, before the wait or during it, ends such a
                wait at once when the request was created here, else as the store answers
                again).
            StoreClosedError: the store was closed while the wait needed it.
        """
        store = self.store
        # The deadline counts from the call: the clock is read again after a read that
        # reached the store at once (which may have set the clock by the server's).
        called = store.clock()
        record, fresh = self.mine.take(pending_id, self.sweeper.looks_begun)
        rode = False
        if record is None or pending_id in self._waiters:
            fresh = False
            # A request created here names its channel before the read, and so does one
            # whose channel closed here since: a close of it ends the wait even while the
            # store is away. One withdrawn as it closed has its outcome already.
            known = self.local.get(pending_id) or self.mine.closed(pending_id)
            if known is not None and known.status is not _PENDING:
                record = known
            else:
                read = partial(store.fetch, pending_id)
                record, rode = await self.outage.through(
                    read, read, None if known is None else known.channel_id
                )
        if record is None:
            raise UnknownRequestError(f"No pending request with id {pending_id}")
        if record.status is _PENDING and self._is_closed_for(record.channel_id):
            raise HandlerClosedError(HANDLER_CLOSED)
        if record.status is _PENDING and timeout is not None:
            when = (called if rode else store.clock()) + timeout
            # A deadline only ever comes forward: one the record has already, at or before
            # ``when``, is the one in force, and the store needs no trip to say so.
            if record.deadline is None or when < record.deadline:
                looks = self.sweeper.looks_begun
                setting = partial(store.set_deadline, pending_id, when)
                deadline, waited = await self.outage.through(
                    setting, partial(store.fetch, pending_id), record.channel_id
                )
                if deadline is not None:
                    record.deadline = deadline
                # A change meanwhile (one a look passed by, or made in an outage) is read.
                fresh = fresh and not waited and self.sweeper.looks_begun == looks
        if record.status is _PENDING:
            if self._is_closed_for(record.channel_id):  # closed as the deadline was written
                raise HandlerClosedError(HANDLER_CLOSED)
            watch = self._waiters.get(pending_id)
            if watch is None:
                deadline, record.deadline = record.deadline, None
                watch = self._waiters[pending_id] = Watch(record)
            else:
                watch.waiters += 1
                deadline = record.deadline
            if deadline is not None:
                self._deadlines.set(watch, deadline)
            self.parked += 1
            if fresh:
                # As stored at its insert, and no look has passed a change of it by since:
                # the next look names any (the feed sooner), and none was settled here.
                self._watch_looks()
            else:
                # Read once more after registering: a change between the reads is not missed.
                self._mark(pending_id)
            try:
                record = await self._await_outcome(pending_id, watch)
            finally:
                self.parked -= 1
                watch.waiters -= 1
                if watch.waiters == 0 and self._waiters.get(pending_id) is watch:
                    self._unwatch(watch)
        self.mine.drop(pending_id)
        return record

    def _unwatch(self, watch: Watch) -> None:
        """The last wait on ``watch`` ended: stop watching its request."""
        del self._waiters[watch.record.pending_id]
        watch.forget()
        self._deadlines.drop(watch)
        if not self._waiters:
            self._deadlines.clear()
            self.sweeper.nudge()  # the sweeper has nothing left to do: it ends now

    def settled(self, record: PendingInput) -> None:
        """Hand a settled record to this process's waiters on it (a settle made here); one
        created here that none waits on yet is kept for its wait."""
        pending_id = record.pending_id
        watch = self._waiters.get(pending_id)
        if watch is not None:
            if not watch.settled.done():
                watch.settled.set_result(record)
        else:
            self.mine.keep_settled(record)

    def _mark(self, pending_id: str | None) -> None:
        """Have the sweeper read ``pending_id`` (every waited request when ``None``)."""
        if self.sweeper.mark(pending_id):
            self._watch_looks()

    def _watch_looks(self) -> None:
        """Have the sweeper run, and look again at what it waits on and when."""
        self._feed()
        self.sweeper.run()

    async def _await_outcome(self, pending_id: str, watch: Watch) -> PendingInput:
        """The settled record, once the sweeper (or a settle made here) hands it over.

        The wait hears of the sweeper through its watch: should the sweeper end while this
        wait still needs it (cancelled from outside), the wait starts the next one. A wait
        that is cut never leaves a sweeper behind, so nothing outlives a loop that is
        shutting down.
        """
        while True:
            if not self.sweeper.running:
                self._mark(pending_id)
            lost = watch.sweeper_lost
            if lost.done():
                lost = watch.sweeper_lost = lost.get_loop().create_future()
            await asyncio.wait((watch.settled, lost), return_when=asyncio.FIRST_COMPLETED)
            if watch.settled.done():
                return watch.settled.result()

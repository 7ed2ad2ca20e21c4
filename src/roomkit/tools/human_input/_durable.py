"""The handler's side of a durable store: waits that any process's answer can end.

One sweeper task per handler reads the requests its waits are on: those a change hint named,
in one batch, so that a burst of answers costs a few reads, not one per waiter. At each
backstop interval it also asks the store which requests changed since it last asked (one
cheap read of the store's change log, :class:`~roomkit.stores.base.
ChangeTracking`) and reads those it waits on: a hint lost to a disconnect delays an answer,
never loses it, and waits that nothing answers cost nothing that grows with their number.
(A store without a change log has every waited request read at each interval instead.)
The deadline is the store's: whichever process sees it pass first records the timeout
through the same check-and-set as an answer; this process's deadlines share one timer, the
sweeper's. An outage is retried with a short backoff; the waits carry on when the store is
back. A wait that finds the store away before it parks (its first read, its deadline's
write) waits for it too, its deadline counted from the call (:mod:`._durable_outage`).

No single failure stops the sweeper: a request whose timeout cannot be recorded (a corrupt
record, a store error about it alone) ends its own waits with that error, and any other
fault is logged and retried like an outage. Should the task end anyway (cancelled) while
waits remain, the first of them to notice starts the next one.

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

from roomkit.core.exceptions import (
    HandlerClosedError,
    RoomKitError,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.base import (
    ChangeMark,
    ChangeTracking,
    DurableStore,
    PendingChange,
    PendingChangeKind,
)
from roomkit.tools.human_input._announce import emit, listen_to
from roomkit.tools.human_input._durable_local import LocalRequests
from roomkit.tools.human_input._durable_outage import Outage, backoff
from roomkit.tools.human_input._durable_watch import Deadlines, Watch
from roomkit.tools.human_input._withdrawing import (
    HANDLER_CLOSED,
    handler_closed,
    release,
    timed_out,
    withdraw_created,
)

__all__ = ["DurableWaits"]

logger = logging.getLogger("roomkit.tools.human_input")

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT


class DurableWaits:
    """The requests this process waits on, woken by the store's change feed."""

    def __init__(self, store: DurableStore, is_closed_for: Callable[[str], bool]) -> None:
        self.store = store
        self._is_closed_for = is_closed_for
        self.mine = LocalRequests()
        """Requests created here, with what their waits know of them without a read."""
        self.local = self.mine.records
        """Requests created here and not yet collected by a wait (for close and ``pending``)."""
        self._looking = False
        self._waiters: dict[str, Watch] = {}
        self._dirty: set[str] = set()
        self._nudge = asyncio.Event()
        self._sweeper: asyncio.Task[None] | None = None
        self._listeners: list[Callable[[PendingChange], None]] = []
        self._unsubscribe: Callable[[], None] | None = None
        self.parked = 0
        """How many ``wait()`` calls are parked here."""
        self.outage = Outage(store.backstop_interval, self._closed_error)
        """The waits that found the store unreachable before they parked, and its probe."""
        self._deadlines = Deadlines()
        # Decided once: an isinstance against a protocol costs tens of microseconds.
        self._tracker = store if isinstance(store, ChangeTracking) else None
        self._since: ChangeMark | None = None
        self._next_look = 0.0
        self.looks = 0
        """How many times the backstop asked the store what changed."""
        self.looks_begun = 0
        """How many looks began (one that failed too)."""
        self.reads = 0
        """How many request records the sweeper read (for hints, changes, resyncs)."""
        self.rereads = 0
        """How many times every waited request was marked to be read at once: the store
        could not tell what changed, or its feed asked for a resync."""

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

    async def release(self, pending_id: str) -> bool:
        """Withdraw the request if still unanswered; ``True`` if it exists."""
        return await release(self, pending_id)

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

    # -- waiting -----------------------------------------------------------------------------

    async def wait(self, pending_id: str, timeout: float | None) -> PendingInput:
        """Block until the stored request settles; return the settled record.

        Raises:
            UnknownRequestError: no such request (never created, or past its retention).
            HandlerClosedError: this handler (or the request's channel) closed while the
                request stays open in the store (a keyed request, kept for the process that
                re-attaches to it), or while the store was unreachable before the wait could
                read it (a close of the channel ends such a wait at once when the request was
                created here, else as the store answers again).
            StoreClosedError: the store was closed while the wait needed it.
        """
        store = self.store
        # The deadline counts from the call: the clock is read again after a read that
        # reached the store at once (which may have set the clock by the server's).
        called = store.clock()
        record, fresh = self.mine.take(pending_id, self.looks_begun)
        rode = False
        if record is None or pending_id in self._waiters:
            fresh = False
            # A request created here names its channel before the read: a close of it ends
            # the wait even while the store is away.
            created = self.local.get(pending_id)
            read = partial(store.fetch, pending_id)
            record, rode = await self.outage.through(
                read, read, None if created is None else created.channel_id
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
                looks = self.looks_begun
                setting = partial(store.set_deadline, pending_id, when)
                deadline, waited = await self.outage.through(
                    setting, partial(store.fetch, pending_id), record.channel_id
                )
                if deadline is not None:
                    record.deadline = deadline
                # A change meanwhile (one a look passed by, or made in an outage) is read.
                fresh = fresh and not waited and self.looks_begun == looks
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
            self._nudge.set()  # the sweeper has nothing left to do: it ends now

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

    def looks_before_insert(self) -> int | None:
        """The looks begun so far, when the next look is sure to name every change made
        from now on (a look ran, none is running); else ``None``."""
        return None if self._since is None or self._looking else self.looks_begun

    def _reread_all(self) -> None:
        """Have the sweeper read every waited request."""
        self.rereads += 1
        self._dirty.update(self._waiters)

    def _mark(self, pending_id: str | None) -> None:
        """Have the sweeper read ``pending_id`` (every waited request when ``None``)."""
        if pending_id is None:
            self._reread_all()
        elif pending_id in self._waiters:
            self._dirty.add(pending_id)
        else:
            return
        self._watch_looks()

    def _watch_looks(self) -> None:
        """Have the sweeper run, and look again at what it waits on and when."""
        self._feed()
        self._nudge.set()
        if self._sweeper is None or self._sweeper.done():
            self._start_sweeper()

    def _start_sweeper(self) -> None:
        sweeper = asyncio.get_running_loop().create_task(
            self._sweep(), name="human-input-durable-sweeper"
        )
        sweeper.add_done_callback(self._sweeper_ended)
        self._sweeper = sweeper

    def _sweeper_ended(self, sweeper: asyncio.Task[None]) -> None:
        """The one callback on the sweeper: if it ended while waits remain, tell them."""
        how = "was cancelled" if sweeper.cancelled() else f"failed ({sweeper.exception()!r})"
        if not self._waiters:
            return
        if sweeper is not self._sweeper:
            # A hint that came before this callback has started the next one already.
            if sweeper.cancelled() or sweeper.exception() is not None:
                logger.warning("The sweeper of durable waits %s: a new one runs", how)
            return
        logger.warning("The sweeper of durable waits %s: starting a new one", how)
        self._reread_all()
        for watch in self._waiters.values():
            watch.lose_sweeper()

    async def _await_outcome(self, pending_id: str, watch: Watch) -> PendingInput:
        """The settled record, once the sweeper (or a settle made here) hands it over.

        The wait hears of the sweeper through its watch: should the sweeper end while this
        wait still needs it (cancelled from outside), the wait starts the next one. A wait
        that is cut never leaves a sweeper behind, so nothing outlives a loop that is
        shutting down.
        """
        while True:
            sweeper = self._sweeper
            if sweeper is None or sweeper.done():
                self._mark(pending_id)
            lost = watch.sweeper_lost
            if lost.done():
                lost = watch.sweeper_lost = lost.get_loop().create_future()
            await asyncio.wait((watch.settled, lost), return_when=asyncio.FIRST_COMPLETED)
            if watch.settled.done():
                return watch.settled.result()

    async def _sweep(self) -> None:
        """One task per handler: reads woken requests in batches, times out due ones.

        Between hints it wakes at the nearest deadline or after the backstop interval; at
        each interval it asks the store what changed, and reads the waited requests among
        those, so a hint lost to a disconnect costs one interval.
        """
        failures = 0
        if self._since is not None:
            # The last look's mark still holds: the waits read their requests as the sweeper
            # starts, and the next look, an interval on, names what changes after.
            self._next_look = asyncio.get_running_loop().time() + self.store.backstop_interval
        while self._waiters:
            try:
                await self._sweep_once(failures)
            except StoreClosedError as error:
                # Nothing will answer through a closed store: its waits end with why.
                for watch in list(self._waiters.values()):
                    watch.fail(error)
                return
            except StoreUnavailableError as error:
                # An outage delays answers, never loses them: the requests are read again.
                if not failures:
                    logger.warning("Store unreachable while waiting on answers: %s", error)
                failures += 1
            except Exception:
                # A fault no single request explains: logged, and retried as an outage is.
                if not failures:
                    logger.exception("Reading the answers of durable waits failed: retrying")
                failures += 1
            else:
                if failures:
                    logger.info("Store reachable again: waits carry on")
                failures = 0

    async def _sweep_once(self, failures: int) -> None:
        """Wait for a hint, a deadline or the backstop, then read the requests it names."""
        loop = asyncio.get_running_loop()
        if self._since is None:
            # Before the first reads: whatever changes after them, a later look names.
            await self._look(loop.time())
        if not self._dirty:
            self._nudge.clear()
            try:
                async with asyncio.timeout(self._delay(loop.time(), failures)):
                    await self._nudge.wait()
            except TimeoutError:
                pass
        if loop.time() >= self._next_look:
            # Even while hints keep coming: one of them may be what a lost hint hides.
            await self._look(loop.time())
        ids, self._dirty = self._dirty, set()
        try:
            await self._read_batch(ids)
        except BaseException:
            self._dirty.update(ids & self._waiters.keys())
            raise

    def _delay(self, now: float, failures: int) -> float:
        """Seconds to the next look, or to the nearest deadline if sooner; after a failure,
        the outage's backoff instead (nothing can be recorded meanwhile)."""
        store = self.store
        if failures:
            return backoff(failures, store.backstop_interval)
        delay = self._next_look - now
        nearest = self._deadlines.nearest()
        if nearest is not None:
            delay = min(delay, nearest - store.clock())
        return max(0.0, delay)

    async def _look(self, now: float) -> None:
        """The backstop: have the sweeper read the waited requests that changed since the
        last look (every waited request, when the store cannot tell)."""
        tracker = self._tracker
        self.looks_begun += 1
        if tracker is None:
            self._reread_all()
            self._since = ()  # looked: the next look is due in an interval
        else:
            self._looking = True
            try:
                changed = await tracker.changes_since(self._since)
            finally:
                self._looking = False
            self.looks += 1
            self._since = changed.mark
            if changed.pending_ids is None:
                self._reread_all()
            else:
                self._dirty.update(self._waiters.keys() & changed.pending_ids)
        # After the look: one that failed is tried again at the next turn.
        self._next_look = now + self.store.backstop_interval

    async def _read_batch(self, ids: set[str]) -> None:
        """Time out the due requests, then read ``ids`` and those the store did not time
        out, and hand each settled one to its waits."""
        store = self.store
        now = store.clock()
        refused: set[str] = set()
        while (watch := self._deadlines.pop_due(now)) is not None:
            pending_id = watch.record.pending_id
            try:
                won = await store.settle(pending_id, _TIMED_OUT, history=timed_out())
            except StoreUnavailableError:
                self._deadlines.retry(watch, now)
                raise
            except Exception as error:
                self._drop(watch, f"could not record the timeout of {pending_id}", error)
                continue
            if won is not None:
                self.settled(won)
            else:
                # Settled elsewhere, or not due by the store's own judgement: read it, and
                # try again an interval later should it still be open.
                refused.add(pending_id)
                self._deadlines.retry(watch, now + store.backstop_interval)
        wanted = [
            pending_id
            for pending_id in ids | refused
            if pending_id in self._waiters and not self._waiters[pending_id].settled.done()
        ]
        if not wanted:
            return
        self.reads += len(wanted)
        found = {record.pending_id: record for record in await store.fetch_many(wanted)}
        for pending_id in wanted:
            watch = self._waiters.get(pending_id)
            if watch is None or watch.settled.done():
                continue
            record = found.get(pending_id)
            if record is None:
                watch.fail(
                    UnknownRequestError(f"Pending request {pending_id} left the store mid-wait")
                )
            elif record.status is not _PENDING:
                watch.settled.set_result(record)
            elif record.deadline is not None:
                self._deadlines.set(watch, record.deadline)

    def _drop(self, watch: Watch, what: str, error: Exception) -> None:
        """End the waits on one request that the store fails on, and keep the others going."""
        logger.error("Ending the waits on pending request: %s (%r)", what, error)
        if not isinstance(error, RoomKitError):
            wrapped = StoreError(f"The store {what}: {type(error).__name__}: {error}")
            wrapped.__cause__ = error
            error = wrapped
        watch.fail(error)

"""The sweeper of the durable waits: the one task that reads what they wait on.

One sweeper task per handler reads the requests its waits are on: those a change hint named,
in one batch, so that a burst of answers costs a few reads, not one per waiter. At each
backstop interval it also asks the store which requests changed since it last asked (one
cheap read of the store's change log, :class:`~roomkit.stores.base.ChangeTracking`) and reads
those it waits on: a hint lost to a disconnect delays an answer, never loses it, and waits
that nothing answers cost nothing that grows with their number. (A store without a change log
has every waited request read at each interval instead.) This process's deadlines share one
timer, the sweeper's: a due request's timeout is recorded through the store's check-and-set.

No single failure stops the sweeper: a request whose timeout cannot be recorded (a corrupt
record, a store error about it alone) ends its own waits with that error, and any other
fault is logged and retried like an outage, with the outage's backoff. Should the task end
anyway (cancelled) while waits remain, it tells each wait's watch, and the first wait to
notice starts the next one. The watches and their deadlines are the waits'
(:class:`~roomkit.tools.human_input._durable.DurableWaits`), handed to the sweeper when it is
built.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from roomkit.core.exceptions import (
    RoomKitError,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores.base import ChangeMark, ChangeTracking, DurableStore
from roomkit.tools.human_input._durable_outage import backoff
from roomkit.tools.human_input._durable_watch import Deadlines, Watch
from roomkit.tools.human_input._withdrawing import timed_out

__all__ = ["Sweeper"]

logger = logging.getLogger("roomkit.tools.human_input")

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT


class Sweeper:
    """Reads the waited requests that hints and looks name, and times out the due ones.

    Args:
        store: The durable store the waits are on.
        waiters: The watches of the waited requests, by id (the waits' own dict, shared).
        deadlines: The deadlines of those watches (the waits' own schedule, shared).
        settled: Hands a record settled here (a timeout) to this process's waits on it.
    """

    def __init__(
        self,
        store: DurableStore,
        waiters: dict[str, Watch],
        deadlines: Deadlines,
        settled: Callable[[PendingInput], None],
    ) -> None:
        self.store = store
        self._waiters = waiters
        self._deadlines = deadlines
        self._settled = settled
        self._looking = False
        self._dirty: set[str] = set()
        self._nudge = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
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
    def running(self) -> bool:
        """Whether a sweeper task is under way."""
        return self._task is not None and not self._task.done()

    def looks_before_insert(self) -> int | None:
        """The looks begun so far, when the next look is sure to name every change made
        from now on (a look ran, none is running); else ``None``."""
        return None if self._since is None or self._looking else self.looks_begun

    def reread_all(self) -> None:
        """Have the sweeper read every waited request."""
        self.rereads += 1
        self._dirty.update(self._waiters)

    def mark(self, pending_id: str | None) -> bool:
        """Have the sweeper read ``pending_id`` (every waited request when ``None``);
        ``False`` when no wait here is on it, and there is nothing to read."""
        if pending_id is None:
            self.reread_all()
        elif pending_id in self._waiters:
            self._dirty.add(pending_id)
        else:
            return False
        return True

    def run(self) -> None:
        """Have the sweeper run (a new task if none is), and look again at what it waits on
        and when."""
        self._nudge.set()
        if self._task is None or self._task.done():
            self._start()

    def nudge(self) -> None:
        """Wake the sweeper: it looks again at what it waits on (and ends when nothing)."""
        self._nudge.set()

    def _start(self) -> None:
        sweeper = asyncio.get_running_loop().create_task(
            self._sweep(), name="human-input-durable-sweeper"
        )
        sweeper.add_done_callback(self._ended)
        self._task = sweeper

    def _ended(self, sweeper: asyncio.Task[None]) -> None:
        """The one callback on the sweeper: if it ended while waits remain, tell them.

        One that returned is no failure: nothing was waited on as it ended (a wait that came
        since starts the next one), or the store closed and it ended each wait with why.
        """
        if not self._waiters:
            return
        if sweeper.cancelled():
            how = "was cancelled"
        elif (error := sweeper.exception()) is not None:
            how = f"failed ({error!r})"
        else:
            if sweeper is self._task and not all(
                watch.settled.done() for watch in self._waiters.values()
            ):
                # It returns with nothing waited on or every wait ended: should a wait ever
                # be left needing it, that wait still starts the next one.
                self._lost()
            return
        if sweeper is not self._task:
            # A hint that came before this callback has started the next one already.
            logger.warning("The sweeper of durable waits %s: a new one runs", how)
            return
        logger.warning("The sweeper of durable waits %s: starting a new one", how)
        self._lost()

    def _lost(self) -> None:
        """Tell each wait's watch that the sweeper ended: the first wait to notice starts the
        next one, which reads every waited request."""
        self.reread_all()
        for watch in self._waiters.values():
            watch.lose_sweeper()

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
            self.reread_all()
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
                self.reread_all()
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
                self._settled(won)
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

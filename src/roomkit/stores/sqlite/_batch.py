"""Group commit for the SQLite store: concurrent writes share one transaction.

With ``synchronous=FULL`` every COMMIT waits for the disk, so the disk, not SQLite, bounds
how many commits a second a connection makes. Writes that arrive while a transaction is
running therefore queue, and the next transaction runs all of them, in arrival order,
before its single COMMIT, in one trip to a worker thread. A write that finds none queued or
running has no one to share with: it runs at once, in its caller's task, sparing the turns
of the event loop that handing it to a batch would take. Each write is still a
check-and-set under the write lock (a later write in the batch sees an earlier one's
effect), and each caller hears its result only once the COMMIT is on disk. A write that
refuses (a corrupt record, an id already stored) fails alone, having written nothing (one
that finds out only after it wrote raises :class:`Undo`, which rolls the transaction back and
runs the others again). A
write that breaks on its own (a value the driver cannot bind, a bug) fails alone too: the
transaction is rolled back and the other writes run again without it, each re-reading what
it checks. Only a fault of SQLite itself
(a lock, the disk) fails the whole batch, and then none of it was written.

A write wrapped in :class:`Unsynced` (the outbox's bookkeeping) needs no wait for the disk: a
transaction of such writes alone commits at ``synchronous=NORMAL``, one with any other write
at the store's level. A later COMMIT at ``FULL`` syncs the log, and with it every commit before.

The queue is :class:`~roomkit.stores._batching.Batcher`'s, with one
transaction running at a time: the store has one connection.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic, TypeVar

from roomkit.core.exceptions import StoreError
from roomkit.stores._batching import Batcher, Call
from roomkit.stores.sqlite._link import Link

__all__ = ["Undo", "Unsynced", "Write", "WriteBatcher"]

T = TypeVar("T")

logger = logging.getLogger("roomkit.tools.human_input.stores.sqlite")

Write = Callable[[sqlite3.Connection, float], T]
"""One write: statements run inside the batch's transaction, on its connection, on the
worker thread that runs the transaction; the float is the store's clock, read once for the
batch on the event loop under the write lock (a write reads nothing of the loop's itself)."""

_LIMIT = 256
"""The most writes one transaction takes, so that a burst still commits in steps."""


@dataclass(slots=True, eq=False)
class WriteBatcher:
    """Runs writes in transactions of their own or, when they queue up, together."""

    link: Link
    """The store's connection."""
    _: KW_ONLY
    clock: Callable[[], float]
    """The store's clock, read on the event loop once the write lock is held."""
    durable: Callable[[], None]
    """Called on the worker thread as soon as each COMMIT is on disk (or, of
    :class:`Unsynced` writes alone, has returned)."""
    committed: Callable[[], None]
    """Called back on the event loop after each COMMIT, before any caller hears its result."""
    aborted: Callable[[], None]
    """Called after each batch that did not commit."""
    _batches: Batcher[Write[Any], Any] = field(init=False)
    _running: int = field(default=0, init=False)
    """Writes called and not yet returned, queued or running."""
    _alone: asyncio.Future[None] | None = field(default=None, init=False)
    """Done when the write running in its caller's task (if one is) has ended."""
    _tidying: asyncio.Task[None] | None = field(default=None, init=False)
    """The copy of the log into the database file that a lone write left to run."""

    def __post_init__(self) -> None:
        self._batches = Batcher(self._commit, max_batch=_LIMIT, max_in_flight=1)

    async def run(self, write: Write[T]) -> T:
        """Run ``write`` and return its result once its transaction has committed.

        A write called while no other is queued or running runs at once, in the caller's
        task (no batch could take another write with it); one called meanwhile queues for
        the next batch.

        Raises:
            StoreError: what ``write`` raised (it wrote nothing), or the fault that kept the
                batch from committing.
        """
        self._running += 1
        try:
            if self._running == 1:
                return await self._at_once(write)
            result: T = await self._batches.submit(write)
            return result
        finally:
            self._running -= 1

    async def wait_idle(self) -> None:
        """Return once every queued write has been run."""
        while True:
            running = [end for end in (self._alone, self._tidying) if end is not None]
            if not any(not end.done() for end in running):
                break
            await asyncio.wait(running)
        await self._batches.wait_idle()

    async def _at_once(self, write: Write[T]) -> T:
        """Run ``write`` alone, in its caller's task: a transaction of its own.

        A caller cancelled while its transaction runs on the worker thread leaves once the
        thread is done; a commit that landed then reaches the listeners by the change feed's
        next poll, which the transaction's abnormal end sends looking for it.
        """
        loop = asyncio.get_running_loop()
        call: Call[Write[Any], Any] = Call(write, loop.create_future())
        self._alone = ended = loop.create_future()
        try:
            broken = await self._attempt([call])
        finally:
            self._alone = None
            ended.set_result(None)
        if broken is not None:
            raise broken[1]
        tidying = self._tidying
        if self.link.checkpoint_due() and (tidying is None or tidying.done()):
            # After the caller is told, as a batch does: the caller does not wait for it.
            self._tidying = loop.create_task(self._checkpoint())
        result: T = call.future.result()
        return result

    async def _checkpoint(self) -> None:
        try:
            await self.link.checkpoint()
        except Exception:
            # No caller waits for it: a failure is reported here, and the next one runs anew.
            logger.exception("copying the log of SQLite store %r failed", self.link.path)

    async def _commit(self, batch: list[Call[Write[Any], Any]]) -> None:
        while batch:
            broken = await self._attempt(batch)
            if broken is None:
                break
            # One write broke the transaction: it fails alone, the others run again.
            index, error = broken
            batch.pop(index).fail(error)
        # After the callers were told: none of them waits for the log's copy.
        await self.link.checkpoint()

    async def _attempt(self, batch: list[Call[Write[Any], Any]]) -> tuple[int, Exception] | None:
        """Run ``batch`` in one transaction; the write that broke it, if one did.

        Raises:
            BaseException: the fault that kept the transaction from committing.
        """
        # Decided before the transaction: a caller cancelled before its turn is dropped.
        writes = [(index, call.value) for index, call in enumerate(batch) if not call.future.done()]
        synced = not all(isinstance(write, Unsynced) for _, write in writes)

        def run(db: sqlite3.Connection, now: float) -> list[tuple[int, Any, StoreError | None]]:
            outcomes: list[tuple[int, Any, StoreError | None]] = []
            for index, write in writes:
                try:
                    outcomes.append((index, write(db, now), None))
                except StoreError as error:
                    outcomes.append((index, None, error))
                except Undo as undo:
                    raise _Broken(index, undo.error) from None
                except Exception as error:
                    if _fault_of_sqlite(error):
                        raise
                    raise _Broken(index, error) from error
            return outcomes

        try:
            outcomes = await self.link.transaction(
                run, clock=self.clock, on_commit=self.durable, synced=synced
            )
        except _Broken as broken:
            self.aborted()
            return broken.index, broken.error
        except BaseException:
            self.aborted()
            raise
        self.committed()
        for index, result, refusal in outcomes:
            if refusal is None:
                batch[index].resolve(result)
            else:
                batch[index].fail(refusal)
        return None


@dataclass(frozen=True, slots=True)
class Unsynced(Generic[T]):
    """A write whose COMMIT need not wait for the disk: a crash of the process loses none of
    it, a power loss the last ones (the outbox's own changes: a notifier starting again works
    out its steps anew, and an item whose claim or completion was lost is claimed and sent
    again, as one whose lease lapsed)."""

    write: Write[T]
    """The write itself."""

    def __call__(self, db: sqlite3.Connection, now: float) -> T:
        return self.write(db, now)


class Undo(Exception):
    """Raised by a write that refuses after it has written: the transaction is rolled back,
    the write fails alone with ``error``, and the other writes of its batch run again.

    Args:
        error: what the write's caller hears.
    """

    def __init__(self, error: StoreError) -> None:
        super().__init__(error)
        self.error = error


class _Broken(Exception):
    """Leaves the transaction (so that it rolls back) when one write breaks it."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(index, error)
        self.index = index
        self.error = error


def _fault_of_sqlite(error: Exception) -> bool:
    """Whether ``error`` is SQLite failing (a lock, I/O, the file), not one write's doing."""
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError

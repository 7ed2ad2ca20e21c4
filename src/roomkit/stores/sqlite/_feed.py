"""The change feed of the SQLite store: a polling task that runs while anyone listens.

SQLite has no notifications between processes, so the feed asks what moved since it last
looked: at once when another process's wake-up hint arrives (see
:mod:`~roomkit.stores.sqlite._wake`), and every ``interval`` seconds in
any case, so that a hint lost or never sent delays a change by one interval at most.
:class:`ChangeLog` keeps the question cheap: ``PRAGMA data_version`` changes only when
another connection commits, and only then does it read the records whose change counter
``seq`` is past the last one it reported. The store's own commits are reported as they
happen, and rung to the other processes' feeds.

:func:`changes_since` answers a waiter's backstop from the same counter: which requests
moved since a mark, in one statement.

A poll that fails is logged once per outage and retried; the first poll that succeeds
afterwards sends :attr:`PendingChangeKind.RESYNC`, because the file may have been replaced
or restored meanwhile. A listener that raises is logged and skipped.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiosqlite

from roomkit.core.exceptions import CorruptRecordError, StoreClosedError, StoreError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._durable_base import LISTED
from roomkit.stores._listener_feed import ListenerFeed
from roomkit.stores._records import FIELDS
from roomkit.stores.base import ChangeMark, ChangesSince, PendingChange, PendingChangeKind
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._link import fetch_all, query
from roomkit.stores.sqlite._wake import WakeHints

__all__ = ["ChangeLog", "PollingFeed", "changes_since", "next_seq"]

logger = logging.getLogger("roomkit.tools.human_input.stores.sqlite")

_PENDING = PendingInputStatus.PENDING
_ID, _STATUS = FIELDS.index("pending_id"), FIELDS.index("status")
_VOTES = FIELDS.index("votes")
_RESYNC = PendingChange(PendingChangeKind.RESYNC)
_SKEW = 1.0
"""Seconds by which the clocks of processes sharing a file may disagree."""
_NOTHING_AFTER = 2**63 - 1
"""A counter no change passes: a first look reads the counter alone."""
_SETTLED_KEPT = 1024
"""The most ids of requests this store settled that :class:`ChangeLog` remembers."""


class PollingFeed(ListenerFeed):
    """Listeners, and the task that polls for changes on their behalf.

    Args:
        poll: returns the changes since the previous call (``[]`` when nothing moved);
            its argument says whether a wake-up hint came (something surely moved).
        interval: seconds between polls when no wake-up hint comes.
        where: how to name the store in log messages.
        hints: the wake-up hints of the store's file: heard while the task runs, rung
            after each of the store's commits.
    """

    def __init__(
        self,
        poll: Callable[[bool], Awaitable[list[PendingChange]]],
        interval: float,
        *,
        where: str,
        hints: WakeHints,
    ) -> None:
        super().__init__(name=f"roomkit sqlite feed {where}", where=where, logger=logger)
        self._poll = poll
        self._interval = interval
        self._hints = hints
        self._resync = False

    def resync(self) -> None:
        """Send :attr:`PendingChangeKind.RESYNC` after the next successful poll."""
        self._resync = True

    def start(self) -> None:
        """Run the feed task if someone listens and a loop is running, hearing hints."""
        task = self._task
        super().start()
        if self._task is not None:
            # Bound before the task's first poll, so that no commit after it goes unrung.
            self._hints.listen()
            if self._task is not task:
                # Not in the task's ``finally``: a task cancelled before its first step
                # never runs it, and would leave the socket bound.
                self._task.add_done_callback(self._ended_task)

    def _ended_task(self, task: asyncio.Task[None]) -> None:
        if self._task is None or self._task.done():
            # No new task took over the socket: no one hears it now.
            self._hints.unlisten()

    def ring(self) -> None:
        """Wake the feeds of the other stores on the file: this store committed a change.

        Called on the thread that ran the commit; one commit rings at a time.
        """
        self._hints.ring()

    async def stop(self) -> None:
        """Stop the feed task and stop hearing hints; listeners stay registered."""
        await super().stop()
        self._hints.unlisten()

    async def _run(self) -> None:
        failing = hinted = False
        while self._listeners:
            try:
                changes = await self._poll(hinted)
            except StoreClosedError:
                return  # the store's next open() starts the feed again
            except StoreError as error:
                if not failing:
                    logger.warning("change feed of %s failing (%s); retrying", self._where, error)
                failing = True
            except Exception:
                # An unexpected failure must not end the feed: every waiter depends on it.
                logger.exception("change feed of %s failed; retrying", self._where)
                failing = True
            else:
                if failing:
                    logger.info("change feed of %s recovered", self._where)
                if failing or self._resync:
                    failing = self._resync = False
                    self.emit(_RESYNC)
                for change in changes:
                    self.emit(change)
            hinted = await self._hints.wait(self._interval)


def next_seq(db: sqlite3.Connection) -> int:
    """Advance the file's change counter in the write transaction open on ``db``; its new
    value, which the change written next carries."""
    ((seq,),) = query(db, sql.BUMP_SEQ)
    return int(seq)


class ChangeLog:
    """Which changes the listeners have heard of, counted by ``seq``.

    Args:
        feed: where the changes go.
    """

    def __init__(self, feed: PollingFeed) -> None:
        self._feed = feed
        self._seen = -1
        self._since: float | None = None
        self._data_version: int | None = None
        self._staged: list[tuple[PendingChangeKind | None, str, int, PendingInput | None]] = []
        # Oldest first: a settled request never opens again, so what is kept stays true.
        self._settled: dict[str, None] = {}

    def listening_since(self, now: float) -> None:
        """Someone subscribed at ``now`` (on the store's clock).

        Before the first connection the change counter is unknown, so the first read
        reports what changed since ``now`` by ``changed_at`` instead: a change committed
        between the subscription and the connection is not lost.
        """
        if self._seen < 0 and self._since is None:
            self._since = now

    def opened(self, counter: int) -> None:
        """A connection opened; ``counter`` is the change counter it found."""
        if self._seen < 0 or counter < self._seen:
            if self._seen >= 0:
                # The counter went back: the file was replaced or restored.
                self._feed.resync()
            self._seen = counter
        # A new connection counts other connections' commits from a new base.
        self._data_version = None

    def stage(
        self,
        kind: PendingChangeKind | None,
        pending_id: str,
        seq: int,
        record: PendingInput | None = None,
    ) -> None:
        """Note a change written by the running transaction; ``None`` for one no listener
        is told of (an earlier deadline: waiters learn of it from :func:`changes_since`).
        ``record``: a settle's record as written, sent along so that a waiter reads none."""
        self._staged.append((kind, pending_id, seq, record))

    def durable(self) -> None:
        """The running transaction's COMMIT is on disk: ring the other processes at once.

        Runs on the thread that ran the transaction, before the result goes back to the
        event loop: another process starts looking while this one is still told.
        """
        if any(kind is not None for kind, _, _, _ in self._staged):
            self._feed.ring()

    def committed(self) -> None:
        """The running transaction committed: report its changes to this store's listeners."""
        staged, self._staged = self._staged, []
        for kind, pending_id, seq, record in staged:
            if seq == self._seen + 1:
                # Nothing committed between the last change seen and this one: a poll
                # need not report it again.
                self._seen = seq
            if kind is PendingChangeKind.SETTLED:
                self._remember_settled(pending_id)
            if kind is not None:
                self._feed.emit(PendingChange(kind, pending_id, record))

    def settled_here(self, pending_id: str) -> bool:
        """Whether this store committed the settle of ``pending_id`` lately (of the last
        :data:`_SETTLED_KEPT`): the request is settled for good, whoever reads it."""
        return pending_id in self._settled

    def _remember_settled(self, pending_id: str) -> None:
        settled = self._settled
        settled[pending_id] = None
        if len(settled) > _SETTLED_KEPT:
            del settled[next(iter(settled))]

    def aborted(self) -> None:
        """The running transaction rolled back: forget what it staged."""
        self._staged.clear()

    async def read(
        self, db: aiosqlite.Connection, *, unsure: bool, hinted: bool = False
    ) -> list[PendingChange]:
        """The changes committed by other connections since the last read.

        ``unsure`` forces a look even when no other connection committed (one of this
        store's own transactions ended in a way that leaves its COMMIT in doubt); so does
        ``hinted`` (another process said it committed), without asking SQLite first. A
        settled record rides along with its change, so that a waiter needs no read.
        """
        if self._since is not None:
            ((before,),) = await fetch_all(db, sql.SEQ_BEFORE, (self._since - _SKEW,))
            self._seen, self._since = min(self._seen, before), None
            unsure = True
        if not hinted:
            # Left as it was after a hinted look: the next poll then looks once more.
            ((version,),) = await fetch_all(db, "PRAGMA data_version")
            if version == self._data_version and not unsure:
                return []
            self._data_version = version
        changes = []
        for *fields, seq in await fetch_all(db, sql.CHANGES_SINCE, (self._seen,)):
            pending_id = fields[_ID]
            if fields[_STATUS] == _PENDING:
                # An open request moves again only when someone votes on it.
                voted = fields[_VOTES] not in (None, "", "[]")
                kind = PendingChangeKind.VOTED if voted else PendingChangeKind.CREATED
                changes.append(PendingChange(kind, pending_id))
            else:
                changes.append(
                    PendingChange(PendingChangeKind.SETTLED, pending_id, _settled(fields))
                )
            self._seen = max(self._seen, seq)
        return changes


def _settled(fields: list[Any]) -> PendingInput | None:
    """The settled record of a change row, or ``None`` when it cannot be read."""
    try:
        return sql.decode_row(fields)
    except CorruptRecordError:
        # Only a hint: a waiter reads the record itself, and hears why it is unreadable.
        return None


async def changes_since(
    session: AbstractAsyncContextManager[aiosqlite.Connection], mark: ChangeMark | None
) -> ChangesSince:
    """The requests whose change counter passed ``mark``'s, and the counter now.

    One statement reads both in one snapshot. The counter grows in commit order (a change
    takes it under the file's write lock), so a change committed after this look has a
    higher one, and the next look names it. A counter below the mark means the file was
    replaced or restored: the look cannot tell what changed.
    """
    after = _NOTHING_AFTER if mark is None else mark[0]
    async with session as db:
        rows = await fetch_all(db, sql.CHANGED_SINCE, (after, LISTED + 1))
    counter = next(int(value) for value, pending_id in rows if pending_id is None)
    ids = frozenset(str(pending_id) for _, pending_id in rows if pending_id is not None)
    known = mark is not None and counter >= mark[0] and len(ids) <= LISTED
    return ChangesSince((counter,), ids if known else None)

"""A durable store in one SQLite file, shared by every process on the machine.

Each store object holds one connection (through aiosqlite, so no call blocks the event
loop) and runs every write as a ``BEGIN IMMEDIATE`` transaction: the write lock is taken
before anything is read, so two processes settling one request take turns, and the second
reads the first one's outcome. The journal is WAL with ``synchronous=FULL``: an outcome is
on disk before its caller hears that it won. (``synchronous="normal"`` leaves the wait for
the disk to the log's checkpoints: an acknowledged outcome then survives the process being
killed, not a power loss.) Writes that arrive while a transaction runs share the next one,
and so one wait for the disk (each is still its own check-and-set).

Other processes' changes arrive by polling: ``PRAGMA data_version`` says cheaply whether
another connection committed, and the change counter ``seq`` says which records moved.
A store that commits a change sends a wake-up hint to the other processes listening on the
file (a Unix datagram socket each, in ``<file>.wake/``), which then poll at once; the poll
every ``backstop_interval`` catches whatever a hint misses. This store's own writes reach
its listeners at once. The file also holds the spend-once ledger
(:class:`~roomkit.stores.SpendLedger`) that the answer desk keeps its
spent links and revoked tokens in.

The store class is a façade over parts that share its connection: its inserts
(:mod:`._insert`), its reads of records (:mod:`._reads`), its settles (:mod:`._settling`),
approvers, votes and histories (:mod:`._approvals`), the spend-once ledger
(:mod:`._spending`), the standing grants (:mod:`._grants`) and the notification outbox
(:mod:`._outbox`), beside its audit trail.

A settle records its settle token with the outcome. When SQLite fails inside its
transaction (an I/O error at COMMIT), whether it committed is unknown, so the settle runs
again with the same token for up to ``settle_retry`` seconds: it finds its token on a record
it settled before, or settles the request now, so the caller learns whether it won. A fault
that wrote nothing (a lock held past ``busy_timeout``, a file moved under the store, refused
before the COMMIT) is raised at once.

::

    async with SQLiteStore("/var/lib/app/pending.db") as store:
        record, created = await store.insert(request)
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import aiosqlite

from roomkit.core.exceptions import StoreClosedError, StoreError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome, check_history, seconds
from roomkit.stores._facade import GrantingFacade
from roomkit.stores._quorum import Ballot, Judgement
from roomkit.stores.base import ChangeListener, PendingChange
from roomkit.stores.grants import Grant, GrantedHistory, GrantedInsert, check_grant_id
from roomkit.stores.outbox import KEEP_DONE, Outbox
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._approvals import Approvals
from roomkit.stores.sqlite._batch import Undo, Write, WriteBatcher
from roomkit.stores.sqlite._feed import ChangeLog, PollingFeed, changes_since, next_seq
from roomkit.stores.sqlite._grants import SQLiteGrants
from roomkit.stores.sqlite._history import purge_chains
from roomkit.stores.sqlite._insert import Inserting
from roomkit.stores.sqlite._link import Link, in_doubt, query, synchronous_level
from roomkit.stores.sqlite._outbox import SQLiteOutbox, purge_outbox
from roomkit.stores.sqlite._reads import Reads
from roomkit.stores.sqlite._settling import Settling
from roomkit.stores.sqlite._spending import Spending
from roomkit.stores.sqlite._trail import SQLiteTrail
from roomkit.stores.sqlite._wake import WakeHints

__all__ = ["SQLiteStore"]

T = TypeVar("T")

logger = logging.getLogger("roomkit.tools.human_input.stores.sqlite")

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT
_PURGE_EVERY = 60.0
"""Seconds on the store's clock between opportunistic purges."""


class SQLiteStore(GrantingFacade):
    """Pending requests and their retained outcomes in a SQLite file.

    Any number of processes, and of store objects in one process, may open the same file:
    exactly one settle wins per request among all of them, committed (and synced to disk)
    before it returns. Close the store (or use ``async with``) when done: its connection
    runs on a thread of its own.

    Args:
        path: the database file; created, with its ``-wal`` / ``-shm`` companions beside
            it, if missing. Processes listening for changes bind their wake-up sockets in
            the folder ``<path>.wake`` (or, when that path is too long for a Unix socket, in
            one under the temporary directory); where none can be bound, changes made
            elsewhere arrive by polling, and one WARNING says so.
        retention_seconds: how long a settled outcome stays readable (and its key keeps
            re-attaching), on :attr:`clock`. ``0`` switches replay off: an outcome then
            stays readable only for the ``SETTLED_GRACE`` (10 s) a waiter in another process
            needs to read it, as does any shorter retention; ``math.inf`` keeps every one.
        backstop_interval: seconds between polls of the change feed when no wake-up
            hint comes, and between a waiter's looks at what changed.
        clock: seconds since the epoch; deadlines, ``settled_at`` and retention use it.
            Every process sharing the file must use the same clock.
        busy_timeout: seconds to wait for another connection's write lock before giving up
            with :class:`~roomkit.core.exceptions.StoreUnavailableError`.
        settle_retry: seconds a settle whose transaction failed keeps running again (with
            its settle token) until it commits, counted from the start of the outage;
            ``0`` gives up at once.
        outbox_retention_seconds: how long the notification outbox keeps a request's
            deliveries once its ending was recorded and all of them are done (sent or given
            up), on :attr:`clock`; the purge of settled records drops them after it.
            ``math.inf`` keeps them.
        synchronous: ``"full"`` (the default): every COMMIT waits until the disk holds it,
            so that an outcome acknowledged survives a power loss or an operating-system
            crash. ``"normal"``: a COMMIT waits for no disk (the log is synced at its
            checkpoints), so that a commit costs a write to the page cache and another
            process hears of it sooner; an acknowledged outcome still survives this
            process being killed (``SIGKILL``, a crash), but the last ones before a power
            loss may be lost (rolled back, never half-written). Each process chooses its
            own; the file is the same. The outbox's own changes commit as with
            ``"normal"`` at either level (a notice lost with them is sent again).
        audit_retention: how long a request's history stays once the request is closed,
            in seconds after its last entry on :attr:`clock`; ``None`` (the default) keeps
            every history for good. At least ``retention_seconds``: the history outlives
            the record.
        create: ``True`` (the default): a missing file is created, and the store's tables
            made in a file without them. ``False``: the file must hold the store already;
            a missing or empty file, or a database without the store's tables, raises
            :class:`~roomkit.core.exceptions.StoreNotFoundError` at first use, and is left
            exactly as it was (for a program that only reads a store); so is a file made by
            an earlier version, which raises
            :class:`~roomkit.core.exceptions.StoreOutdatedError` instead of gaining what
            this version adds.

    Raises:
        TypeError: ``path`` is not a ``str`` / ``os.PathLike``, a number is not a number,
            or ``clock`` is not callable.
        ValueError: ``retention_seconds``, ``busy_timeout`` or ``settle_retry`` is
            negative, ``backstop_interval`` is not positive and finite, ``synchronous``
            is neither ``"full"`` nor ``"normal"``, or ``audit_retention`` is shorter than
            ``retention_seconds``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention_seconds: float = 86_400,
        backstop_interval: float = 0.05,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 5.0,
        settle_retry: float = 5.0,
        outbox_retention_seconds: float = KEEP_DONE,
        synchronous: str = "full",
        audit_retention: float | None = None,
        create: bool = True,
    ) -> None:
        location = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
        if not isinstance(location, str):
            raise TypeError(f"path must be a str or os.PathLike[str], got {type(path).__name__}")
        super().__init__(
            retention_seconds=seconds(
                "retention_seconds", retention_seconds, zero=True, finite=False
            ),
            backstop_interval=backstop_interval,
            clock=clock,
            settle_retry=settle_retry,
            logger=logger,
            audit_retention=audit_retention,
        )
        self.path = location
        """The database file."""
        self.busy_timeout = seconds("busy_timeout", busy_timeout, zero=True)
        """Seconds to wait for another connection's lock."""
        self.outbox_retention = seconds(
            "outbox_retention_seconds", outbox_retention_seconds, zero=True, finite=False
        )
        """Seconds the outbox keeps a request's finished deliveries after its ending."""
        self.outbox: Outbox = SQLiteOutbox(self._write, self._session, location)
        """The notification outbox beside the requests, in the same file (one per store)."""
        self._hints = WakeHints(location, where=repr(location))
        self._feed = PollingFeed(
            self._poll, self.backstop_interval, where=repr(location), hints=self._hints
        )
        self._changes = ChangeLog(self._feed)
        self._look = lambda mark: changes_since(self._session(), mark)
        self.synchronous = synchronous_level(synchronous)
        """How a COMMIT waits for the disk: ``"full"`` or ``"normal"``."""
        self._link = Link(
            location,
            busy_timeout=self.busy_timeout,
            on_open=self._changes.opened,
            synchronous=self.synchronous,
            create=bool(create),
        )
        self._writes = WriteBatcher(
            self._link,
            clock=lambda: self.clock(),
            durable=self._changes.durable,
            committed=self._changes.committed,
            aborted=self._changes.aborted,
        )
        self._next_purge = -math.inf
        self._closed = False
        self.trail = SQLiteTrail(self._session, self._write, self.audit_retention)
        """The store's audit trail: its signed heads and checkpoints (``ROOMKIT_AUDIT_KEY``)."""
        self._reads = Reads(self._session, self._cutoff)
        parts = (self._write, self._session, self._changes, self.trail)
        self._settling = Settling(*parts)
        self._approvals: Approvals = Approvals(*parts)
        self._spending = Spending(self._write, self._session, self.clock)
        self.grants = SQLiteGrants(self._write, self._session, self.clock, location)
        """The standing grants beside the requests, in the same file (one per store)."""
        self._inserting = Inserting(
            *parts,
            self.grants,
            lambda at, now: self._retained(at, now=now),
            self._purge_due,
            self._purge_next,
        )

    # -- connection ----------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect and create the schema; idempotent (every other method opens lazily, until
        :meth:`close`; after it, only this opens the store again).

        Raises:
            StoreUnavailableError: the file cannot be opened or created (the message says
                why).
            StoreFormatError: the file was written by a newer version of roomkit.
            StoreOutdatedError: opened with ``create=False``, and made by an earlier
                version (it is left as it was, not brought up to date).
        """
        self._closed = False
        async with self._session():
            pass

    async def close(self) -> None:
        """Stop the change feed and disconnect; idempotent.

        Then every call but :meth:`open` raises :class:`StoreClosedError`, rather than open
        the file again behind the caller's back (and keep its thread and feed running).
        """
        self._closed = True
        await self._feed.stop()
        await self._writes.wait_idle()
        await self._link.close()
        # Last: the writes that were still running rang the other processes after their
        # commits, and a sender closed before them would have been opened anew and left open.
        self._hints.close()

    def _session(self) -> AbstractAsyncContextManager[aiosqlite.Connection]:
        self._check_open()
        self._feed.start()
        return self._link.session()

    async def _write(self, write: Write[T]) -> T:
        self._check_open()
        self._feed.start()
        return await self._writes.run(write)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError.of("SQLite", repr(self.path))

    # -- records -------------------------------------------------------------------------------

    async def insert(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]] = ()
    ) -> tuple[PendingInput, bool]:
        """Record a new pending request; ``(record, True)`` when it was created.

        When ``request.key`` matches a retained record (open or settled), nothing is
        written and ``(that record, False)`` comes back. The store keeps no reference to
        ``request``: the record returned is rebuilt from what was stored. ``history`` (its
        ``created`` entry) starts the request's chain in the insert's transaction, when
        the request is created.

        Raises:
            ValueError: ``request`` is not pending.
            TypeError: its arguments or answer schema are not JSON-serialisable.
            InvalidTextError: a text of the request holds a lone surrogate.
            StoreError: a request with this ``pending_id`` is already stored, or the
                database refused the row by another constraint (the message says which).
        """
        inserted = await self._inserting.insert(request, history, ungranted=False)
        assert inserted is not None  # only a look for grants writes nothing
        return inserted

    async def insert_ungranted(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]] = ()
    ) -> tuple[PendingInput, bool] | None:
        """:meth:`insert`, unless a live standing grant (:attr:`grants`) names the request's
        tool: then nothing is written and ``None`` comes back (a grant may cover the call).
        The look for grants runs in the insert's own write: one trip to the file, not two.

        Raises:
            ValueError, TypeError, InvalidTextError, StoreError: as :meth:`insert`.
        """
        return await self._inserting.insert(request, history, ungranted=True)

    async def _insert_settled(
        self, request: PendingInput, history: Sequence[dict[str, Any]]
    ) -> tuple[PendingInput, bool]:
        inserted = await self._inserting.insert(request, history, ungranted=False, settled=True)
        assert inserted is not None  # only a look for grants writes nothing
        return inserted

    async def _insert_with_grant(
        self, request: PendingInput, grant_id: str, history: GrantedHistory
    ) -> GrantedInsert | None:
        check_grant_id(grant_id)
        used: list[Grant] = []

        def use(db: sqlite3.Connection, now: float) -> Sequence[dict[str, Any]] | None:
            grant = self.grants.use_in(db, grant_id, now)
            if grant is None:
                return None
            used.append(grant)
            try:
                return check_history(history(grant))
            except StoreError as error:
                raise Undo(error) from None  # the use goes back with the rest of the write

        settled = request.status is not _PENDING
        inserted = await self._inserting.insert(
            request, (), ungranted=False, granted=use, settled=settled
        )
        if inserted is None:
            return None
        record, created = inserted
        return GrantedInsert(record, created, used[-1] if created else None)

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled (within retention), or ``None``.

        Raises:
            CorruptRecordError: the stored row is not a record this library wrote.
        """
        return await self._reads.fetch(pending_id)

    async def mark_announced(self, pending_id: str) -> None:
        """Record that the request was announced; an unknown id is ignored.

        A request this store settled lately owes no announcement (its settle cleared it):
        marking it writes nothing and costs no trip to the file.

        Raises:
            StoreUnavailableError: the file cannot be read or written (the message says why).
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        if self._changes.settled_here(pending_id):
            # A settle clears the owed announcement: the mark would write nothing.
            self._check_open()
            return

        def write(db: sqlite3.Connection, now: float) -> None:
            db.execute(sql.MARK_ANNOUNCED, (pending_id,))

        await self._write(write)

    async def _apply_deadline(self, pending_id: str, deadline: float) -> float | None:
        def write(db: sqlite3.Connection, now: float) -> float | None:
            state = query(db, sql.SELECT_STATE, (pending_id,))
            if not state or state[0][0] != _PENDING:
                return None
            current: float | None = state[0][1]
            if current is not None and current <= deadline:
                return current
            seq = next_seq(db)
            db.execute(sql.SET_DEADLINE, (deadline, seq, pending_id))
            self._changes.stage(None, pending_id, seq)
            return deadline

        return await self._write(write)

    async def _settle_checked(
        self, pending_id: str, status: PendingInputStatus, token: str, outcome: Outcome
    ) -> PendingInput | None:
        """One settle in a write transaction; a failed commit runs it again with the token."""
        grant, grants = outcome.grant, self.grants
        also = None if grant is None else lambda db, now: grants.add_in(db, grant, now)
        return await self._settle_knowing(
            lambda: self._settling.settle(pending_id, status, token, outcome, also),
            pending_id,
            repr(self.path),
            in_doubt=in_doubt,
        )

    async def purge_expired(self) -> int:
        """Drop settled records older than the retention, the outbox's finished deliveries
        older than ``outbox_retention_seconds`` and the histories past the audit retention;
        return how many records went.

        Raises:
            StoreUnavailableError: the file cannot be read or written (the message says why).
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        return await self._write(self._purge)

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` for changes made by any process; returns the unsubscribe.

        The feed polls every :attr:`backstop_interval` while anyone listens. This store's
        own writes reach listeners as soon as they commit (and may repeat after a poll);
        :attr:`PendingChangeKind.RESYNC` follows a recovered failure of the feed.

        Raises:
            TypeError: ``listener`` is not callable.
        """
        # Until the store first connects, "from now on" can only be told by the clock.
        self._changes.listening_since(self.clock())
        return super().subscribe(listener)

    # -- approvals: votes -----------------------------------------------------------------------

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """Record a vote on a quorum approval, in one write transaction.

        The transaction reads the record under the file's write lock, judges the vote
        (:func:`~roomkit.stores.judge`: pending, before its deadline on
        :attr:`clock`, a listed approver who has not voted on these arguments), writes it,
        settles the request when it decides it, and appends its history entries: all or
        nothing. A vote that meets a passed deadline records the timeout instead. A failed
        commit runs the vote again with its token, which finds it counted if it was.

        Raises:
            StoreUnavailableError: the store stayed away for :attr:`settle_retry` seconds;
                whether the vote was recorded is unknown.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        return await self._settle_knowing(
            lambda: self._approvals.vote(pending_id, ballot),
            pending_id,
            repr(self.path),
            in_doubt=in_doubt,
        )

    # -- helpers -------------------------------------------------------------------------------

    def _purge_due(self, db: sqlite3.Connection, now: float) -> None:
        if now >= self._next_purge:
            self._purge(db, now)

    def _purge_next(self) -> None:
        self._next_purge = -math.inf

    def _purge(self, db: sqlite3.Connection, now: float) -> int:
        gone = query(db, sql.PURGE, (now - self._keep,))
        purge_outbox(db, now - self.outbox_retention)
        if self.audit_retention is not None:
            purge_chains(db, now - self.audit_retention)
        self._next_purge = now + _PURGE_EVERY
        return len(gone)

    async def _poll(self, hinted: bool) -> list[PendingChange]:
        async with self._session() as db:
            changes = await self._changes.read(db, unsure=self._link.dirty, hinted=hinted)
            self._link.dirty = False
        if self.clock() >= self._next_purge:
            # After the look, so that a purge's commit never delays a wake-up.
            await self._write(self._purge)
        return changes

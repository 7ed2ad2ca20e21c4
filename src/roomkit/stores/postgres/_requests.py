"""A durable store in a PostgreSQL database, shared by every process that reaches it.

Every write is one transaction on a connection of a ``psycopg_pool`` pool. A settle is one
``UPDATE`` of the request's row while it is pending, so two processes settling one request
take turns on the row's lock and the second finds it settled; settles made at once share
a transaction and a round trip. An insert with an idempotency
key relies on the key's unique index, so concurrent creates of one key open one request.
With the server's ``synchronous_commit=on`` (its default) an outcome is on disk before its
caller hears that it won. Unless a ``clock=`` is given, deadlines are the server's: a
settle judges them by the server's clock as its statement runs.

Each create and settle sends a ``NOTIFY`` inside its transaction, delivered only once it
commits; the change feed LISTENs on one connection of its own while anyone listens, and
waiters ask what changed every ``backstop_interval`` in case a notification was lost. The database
also holds the spend-once ledger
(:class:`~roomkit.stores.SpendLedger`).

The store class is a façade over parts that share its pool: its reads of records
(:mod:`._reads`), its settles (:mod:`._settling`), approvers, votes and histories
(:mod:`._approvals`) and the spend-once ledger (:mod:`._spending`), beside its audit trail
and its notification outbox.

A settle records its settle token with the outcome. When the connection fails mid-way
(the server restarted, the connection terminated), whether the COMMIT landed is unknown, so
the settle runs again with the same token for up to ``settle_retry`` seconds and learns
whether it won.

Through PgBouncer in transaction mode, give the store a pool whose connections prepare no
statements (``kwargs={"autocommit": True, "prepare_threshold": None}``); LISTEN cannot work
there, and the change feed finds that out, warns once and polls.

Needs the ``postgres`` extra (``pip install -e '.[postgres]'`` in roomkit's checkout)::

    async with PostgresStore("postgresql://app:secret@db.internal/app") as store:
        handler = HumanInputHandler(store=store)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Unpack

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import (
    Outcome,
    check_history,
    check_insertable,
    check_settle,
    seconds,
    storable_id,
)
from roomkit.stores._facade import GrantingFacade
from roomkit.stores._quorum import Ballot, Judgement
from roomkit.stores.base import (
    SettleOutcome,
)
from roomkit.stores.grants import Grant, GrantedHistory, GrantedInsert, check_grant_id
from roomkit.stores.outbox import KEEP_DONE, Outbox
from roomkit.stores.postgres._approvals import Approvals
from roomkit.stores.postgres._changes import changes_since
from roomkit.stores.postgres._clock import ServerClock
from roomkit.stores.postgres._dsn import check_schema_name, store_target
from roomkit.stores.postgres._feed import NotifyFeed
from roomkit.stores.postgres._grants import PostgresGrants
from roomkit.stores.postgres._insert import Clocks, insert_granted, insert_request
from roomkit.stores.postgres._link import Link
from roomkit.stores.postgres._migrate import migrate, up_to_date
from roomkit.stores.postgres._outbox import PostgresOutbox
from roomkit.stores.postgres._purging import Purging
from roomkit.stores.postgres._reads import Reads
from roomkit.stores.postgres._schema import VERSION, Statements
from roomkit.stores.postgres._settling import Settling
from roomkit.stores.postgres._spending import Spending
from roomkit.stores.postgres._text import as_recorded
from roomkit.stores.postgres._trail import PostgresTrail

__all__ = ["PostgresStore"]

logger = logging.getLogger("roomkit.tools.human_input.stores.postgres")

_PENDING = PendingInputStatus.PENDING
_PURGE_BOUND = 600.0
"""Seconds a purge may take (a long backlog) before the server counts as not answering."""


class PostgresStore(GrantingFacade):
    """Pending requests and their retained outcomes in a PostgreSQL database.

    Any number of processes, and of store objects in one process, may use the same
    database and schema: exactly one settle wins per request among all of them.

    Args:
        dsn_or_pool: a ``postgresql://`` / ``postgres://`` URL or a ``key=value``
            connection string (the store opens and closes a pool of its own), or an open
            or unopened ``psycopg_pool.AsyncConnectionPool`` (borrowed: the store opens it
            if needed, never closes it; it reconnects on its own ``reconnect_timeout``,
            which the store's own pool sets to 0.5 s).
        schema: the PostgreSQL schema the tables live in; created if missing.
        retention_seconds: how long a settled outcome stays readable (and its key keeps
            re-attaching), on :attr:`clock`. ``0`` switches replay off (an outcome stays
            for the ``SETTLED_GRACE``, 10 s, a waiter elsewhere needs); ``math.inf`` keeps
            every one.
        backstop_interval: seconds between a waiter's looks at what changed (one read of the
            store's change log, which finds nothing while nothing moves), in case a
            notification was lost.
        clock: seconds since the epoch; deadlines, ``settled_at`` and retention use it.
            ``None`` (the default) uses the database server's clock: a settle's deadline
            is judged by the server when it runs, and :attr:`clock` reads the server's
            time through the local clock (measured when the store opens, and again every
            minute), so processes whose own clocks disagree still agree on every deadline.
            A clock given instead must be the same for every process sharing the database.
        settle_retry: seconds a settle whose outcome a fault hid keeps running again (with
            its settle token), counted from the start of the outage; ``0`` gives up at once.
        pool_size: the most connections the store's own pool opens; more calls at once queue
            for one, and a call that queues 60 s fails with
            :class:`~roomkit.core.exceptions.StoreUnavailableError` saying the pool was busy.
            ``None`` (the default) takes the URL's ``?pool_size=``, else 16.
        connect_timeout: seconds a connection may take to open, and, after a fault, a call
            may wait for one of the pool's (a busy pool lets calls queue for longer).
            ``None`` (the default) takes the URL's ``?connect_timeout=``, else 5.
        outbox_retention_seconds: as :class:`~.sqlite.SQLiteStore`'s (a week by default).
        audit_retention: seconds a closed request's history stays after its last entry
            (at least ``retention_seconds``); ``None`` (the default) keeps every history.
        create: ``True`` (the default): the schema and the store's tables are created, or
            migrated, on first use. ``False``: the schema must hold the store's tables
            already; without them, the first use raises
            :class:`~roomkit.core.exceptions.StoreNotFoundError` and creates nothing, nor
            runs any migration (for a program that only reads a store); tables of an
            earlier version raise :class:`~roomkit.core.exceptions.StoreOutdatedError`
            instead of being migrated.

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: an argument is out of range, or ``dsn_or_pool`` is not a PostgreSQL DSN,
            or its ``pool_size`` or ``connect_timeout`` is not one the store takes, or is
            given beside the argument of the same name.
    """

    def __init__(
        self,
        dsn_or_pool: str | AsyncConnectionPool[Any],
        *,
        schema: str = "public",
        retention_seconds: float = 86_400,
        backstop_interval: float = 0.25,
        clock: Callable[[], float] | None = None,
        settle_retry: float = 5.0,
        pool_size: int | None = None,
        connect_timeout: float | None = None,
        outbox_retention_seconds: float = KEEP_DONE,
        audit_retention: float | None = None,
        create: bool = True,
    ) -> None:
        # Kept without bound when infinite: a settled outcome then stays readable for good.
        retention = seconds("retention_seconds", retention_seconds, zero=True, finite=False)
        super().__init__(
            retention_seconds=retention,
            backstop_interval=backstop_interval,
            clock=clock if clock is not None else ServerClock(),
            settle_retry=settle_retry,
            logger=logger,
            audit_retention=audit_retention,
        )
        self._server_clock = self.clock if isinstance(self.clock, ServerClock) else None
        target = store_target(dsn_or_pool, pool_size=pool_size, connect_timeout=connect_timeout)
        self.schema = check_schema_name(schema)
        """The PostgreSQL schema of the store's tables."""
        self._sql = Statements(self.schema)
        self._create = bool(create)
        self._link = Link(
            target.target,
            self._migrate,
            pool_size=16 if target.pool_size is None else target.pool_size,
            connect_timeout=target.connect_timeout,
            schema=self.schema,
            stays_closed=True,
        )
        self.where = self._link.where
        """The server and database, without the password."""
        self._look = lambda mark: changes_since(self._rows, self._sql.changed_since, mark)
        self._feed = NotifyFeed(
            self._link, self._sql.channel, self.changes_since, interval=self.backstop_interval
        )
        self._outbox = PostgresOutbox(self, keep=outbox_retention_seconds)
        self.outbox: Outbox = self._outbox
        """The notification outbox beside the requests, in the same schema (one per store)."""
        self.grants = PostgresGrants(self)
        """The standing grants beside the requests, in the same schema (one per store)."""
        link, statements = self._link, self._sql
        self._reads = Reads(self._rows, statements, self._cutoff)
        self._settling = Settling(link, statements, self._ready, self._judged_at, self._feed)
        self._approvals: Approvals = Approvals(
            link, statements, self._ready, self._judged_at, self._feed, self._settling
        )
        self._spending = Spending(
            link, statements, self._ready, self.clock, self._settle_knowing, self.settle_retry
        )
        self._purging = Purging(statements, self._outbox, self._keep, self.audit_retention)
        self.trail = PostgresTrail(self, self._link, self._sql, self._ready)
        """The store's audit trail: its signed heads and checkpoints (``ROOMKIT_AUDIT_KEY``)."""

    # -- connection ----------------------------------------------------------------------------

    @property
    def pool_size(self) -> int:
        """The most connections of the store's pool (or the ``max_size`` of the pool given)."""
        return self._link.pool_size

    @property
    def connect_timeout(self) -> float:
        """Seconds a connection may take to open."""
        return self._link.connect_timeout

    async def open(self) -> None:
        """Connect, and create or migrate the tables; idempotent (every other method opens
        lazily, until :meth:`close`; after it, only this opens the store again).

        Raises:
            StoreError: the server cannot be reached, or refuses the user, the password or
                the database, or the user may not make (or use) the tables; the message says
                what to check or grant.
            StoreFormatError: the tables were made by a newer version of roomkit.
            StoreOutdatedError: opened with ``create=False``, and made by an earlier
                version (it is left as it was, not brought up to date).
        """
        self._feed.closed = False
        fresh = not self._link.opened
        try:
            await self._link.open(reopen=True)
            await self._ready()
        except BaseException:
            # The caller of ``async with`` gets no store to close: an opening that fails
            # (or is cancelled) closes what it started, the pool and the change feed.
            if fresh:
                await self._feed.stop()
                await self._link.release()
            raise

    async def _ready(self) -> None:
        """Open lazily; after :meth:`close`, raise StoreClosedError instead."""
        await self._link.open()
        if self._server_clock is not None and not self._server_clock.synced:
            async with self._link.connection() as db:
                await self._server_clock.sync(db)
        self._feed.start()

    async def close(self) -> None:
        """Stop the change feed and close the store's own pool; idempotent. Then every call
        but :meth:`open` raises StoreClosedError, instead of opening them again unasked."""
        self._feed.closed = True
        await self._feed.stop()
        await self._link.close()

    async def _migrate(self, db: AsyncConnection[Any], where: str) -> None:
        if self._create:
            await migrate(db, self._sql, where=where, version=VERSION)
        elif not await up_to_date(db, self._sql, where=where, schema=self.schema, version=VERSION):
            await migrate(db, self._sql, where=where, version=VERSION)  # refuses newer tables

    def _judged_at(self) -> float | None:
        """The time a settle judges deadlines by; ``None``: the server's, as it runs."""
        return None if self._server_clock is not None else self.clock()

    async def _rows(self, statement: str, parameters: Any = ()) -> list[Any]:
        """Run one read and return its rows."""
        await self._ready()
        async with self._link.connection() as db:
            cursor = await db.execute(statement, parameters)
            return list(await cursor.fetchall())

    # -- records -------------------------------------------------------------------------------

    async def insert(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]] = ()
    ) -> tuple[PendingInput, bool]:
        """Record a new pending request; ``(record, True)`` when it was created.

        When ``request.key`` matches a retained record (open or settled), nothing is
        written and ``(that record, False)`` comes back. ``history`` (its ``created``
        entry) starts the request's chain in the insert's transaction, when it is created.

        Raises:
            ValueError: ``request`` is not pending.
            TypeError: its arguments or answer schema are not JSON-serialisable.
            InvalidTextError: a text of the request holds a lone surrogate, or its id a NUL.
            StoreError: a request with this ``pending_id`` is already stored, or the server
                refused a value too long for an index (the message names it).
        """
        check_insertable(request)
        return await self._insert(request, history)

    async def _insert(
        self, request: PendingInput, history: Sequence[dict[str, Any]]
    ) -> tuple[PendingInput, bool]:
        """:meth:`insert`, of a request checked already (pending, or settled as it is made)."""
        entries = check_history(history)
        await self._ready()
        await self._purging.on_the_way(self.clock(), self.purge_expired, logger, self.where)
        clocks = Clocks(self.clock, lambda at, now: self._retained(at, now=now), self._judged_at)
        record, created = await insert_request(self._link, self._sql, request, entries, clocks)
        if created:
            self._created(record)
        return record, created

    _insert_settled = _insert

    async def _insert_with_grant(
        self, request: PendingInput, grant_id: str, history: GrantedHistory
    ) -> GrantedInsert | None:
        from psycopg.errors import UndefinedTable

        check_insertable(request, settled=request.status is not _PENDING)
        check_grant_id(grant_id)
        await self._ready()

        async def use(db: AsyncConnection[Any]) -> tuple[Grant, Sequence[dict[str, Any]]] | None:
            grant = await self.grants.use_in(db, grant_id)
            return None if grant is None else (grant, check_history(history(grant)))

        clocks = Clocks(self.clock, lambda at, now: self._retained(at, now=now), self._judged_at)
        try:
            inserted = await insert_granted(self._link, self._sql, request, use, clocks)
        except UndefinedTable:
            return None  # no grants table in the schema: no grant covers the call
        if inserted is None:
            return None
        if inserted[1]:
            self._created(inserted[0])
        return GrantedInsert(*inserted)

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled (within retention), or ``None``.

        Raises:
            CorruptRecordError: the stored record is not one this library wrote.
            StoreUnavailableError: the server cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        return await self._reads.fetch(pending_id)

    async def mark_announced(self, pending_id: str) -> None:
        """Record that the request was announced; an unknown id is ignored.

        Raises:
            StoreUnavailableError: the server cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        await self._rows_written(self._sql.mark_announced, (pending_id,))

    async def _apply_deadline(self, pending_id: str, deadline: float) -> float | None:
        rows = await self._rows(self._sql.set_deadline, (deadline, pending_id, deadline))
        if rows:
            return float(rows[0][0])
        rows = await self._rows(self._sql.select_state, (pending_id,))
        if not rows or rows[0][0] != _PENDING:
            return None
        current: float | None = rows[0][1]
        return None if current is None else float(current)

    async def _settle_checked(
        self, pending_id: str, status: PendingInputStatus, token: str, outcome: Outcome
    ) -> PendingInput | None:
        if outcome.grant is not None:
            grants = self.grants
            return await self._settle_knowing(
                lambda: self._settling.granting(pending_id, status, token, outcome, grants),
                pending_id,
                self.where,
            )
        return (await self._batched(pending_id, status, token, outcome, plain=False))[0]

    async def settle_plain(
        self,
        pending_id: str,
        result: str,
        *,
        settled_by: str | None = None,
        history: Sequence[dict[str, Any]] = (),
    ) -> tuple[PendingInput | None, PendingInput | None]:
        """Resolve the request with ``result`` as :meth:`settle` does (raising as it does),
        unless its answer needs a check against it (an answer schema, an approval), which
        the same UPDATE decides: an answer to a request not held here needs no read first.

        Returns the record when this call won (else ``None``), and the request as the call
        left it (``None`` when it is not stored): a pending one needs its answer checked.

        Raises:
            ValueError, TypeError, InvalidTextError, CorruptRecordError,
                StoreUnavailableError: as :meth:`settle`.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        given = Outcome(result, None, False, settled_by)
        checked = check_settle(pending_id, PendingInputStatus.RESOLVED, None, given, history)
        if checked is None:
            return None, None
        return await self._batched(pending_id, *checked, plain=True)

    async def _batched(
        self, pending_id: str, status: PendingInputStatus, token: str, outcome: Outcome, plain: bool
    ) -> tuple[PendingInput | None, PendingInput | None]:
        """One settle, sharing a statement with the settles made meanwhile (a fault that
        hides its commit runs it again with the token); its record if it won, and the
        request as it left it."""
        recorded = as_recorded(pending_id, status, token, outcome)
        if recorded is None:
            return None, None
        return await self._settle_knowing(
            lambda: self._settling.batched(pending_id, recorded, outcome.history, plain=plain),
            pending_id,
            self.where,
        )

    async def settle_in(
        self,
        connection: AsyncConnection[Any],
        pending_id: str,
        status: PendingInputStatus,
        *,
        token: str | None = None,
        history: Sequence[dict[str, Any]] = (),
        **outcome: Unpack[SettleOutcome],
    ) -> PendingInput | None:
        """The check-and-set inside the caller's own transaction on ``connection``;
        ``history`` as :meth:`settle`, appended in that transaction when this call wins.

        The settle joins the transaction open on ``connection`` (as a savepoint), so that
        the application's own writes and the outcome commit or roll back together. The
        record returned means "settled if your transaction commits"; the row stays locked
        until then, so a racing settle elsewhere waits and then loses, or wins after a
        rollback. The change's NOTIFY leaves only at the commit: waiters wake after it, and
        a rollback leaves the request pending. Nothing is retried: the transaction is the
        caller's.

        Raises:
            TypeError: ``connection`` is not a ``psycopg.AsyncConnection``.
            ValueError, InvalidTextError, CorruptRecordError: as :meth:`settle`.
            StoreUnavailableError: the connection failed (the caller's transaction with it).
        """
        return await self._settling.settle_in(
            connection, pending_id, status, token, history, outcome
        )

    async def purge_expired(self) -> int:
        """Drop what is past its retention (records, outbox deliveries, the histories past
        the audit retention); how many records.

        Raises:
            StoreUnavailableError: the server cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        await self._ready()
        async with self._link.connection(bound=_PURGE_BOUND) as db:
            if self._server_clock is not None:
                await self._server_clock.sync(db)
            return await self._purging.purge(db, self.clock())

    # -- approvals: votes -----------------------------------------------------------------------

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """Record a vote on a quorum approval in one transaction that holds the row's lock
        (see :mod:`~roomkit.stores.postgres._votes`); a fault that hides
        its commit runs it again with its token, which finds it counted if it was.

        Raises:
            StoreUnavailableError: the store stayed away for :attr:`settle_retry` seconds;
                whether the vote was recorded is unknown.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        if "\x00" in pending_id or not storable_id(pending_id):
            return Judgement(False)
        return await self._settle_knowing(
            lambda: self._approvals.vote(pending_id, ballot), pending_id, self.where
        )

    # -- helpers -------------------------------------------------------------------------------

    async def _rows_written(self, statement: str, parameters: Any) -> None:
        await self._ready()
        async with self._link.connection() as db:
            await db.execute(statement, parameters)

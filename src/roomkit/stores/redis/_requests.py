"""The Redis store: pending requests shared by processes on many machines.

Every record is a Redis hash; the key check-and-insert, the settle and the deadline update
are Lua scripts, so each is atomic on the server whichever process runs it, and each write
is announced on a pub/sub channel that feeds :meth:`RedisStore.subscribe`.

An outcome is durable to the degree the server is configured: with
``appendonly yes`` and ``appendfsync always`` Redis writes it to disk before it replies, so
a settle that returned survives a crash of the server; with ``appendfsync everysec`` (the
usual default) up to a second of outcomes can be lost, and without persistence a restart
loses them all. :meth:`RedisStore.open` reads these settings and logs a warning naming what
the server would lose. Settled records expire on the server ``retention_seconds`` after they
were settled (``SETTLED_GRACE``, 10 s, at the least).

The store class is a façade over parts that share its client: its reads of records
(:mod:`._reads`), its settles (:mod:`._settling`), approvers, votes and histories
(:mod:`._approvals`) and the spend-once ledger (:mod:`._spending`), beside its audit trail
and its notification outbox.

Every call waits for the server for ``timeout`` seconds at the most (5 s by default: the
wait for a pooled connection, connecting, the client's retries and every round trip
together), then raises :class:`~roomkit.core.exceptions.StoreUnavailableError` saying the
server did not answer: a frozen server keeps its connections open and answers nothing.

A settle whose reply is lost (a connection cut, a server killed, a server that did not
answer in time) is run again with its settle token until the server answers, for up to
``settle_retry`` seconds from when the first unanswered attempt was sent: the script finds
its own token on a record it settled before, so the caller learns whether it won, and an
attempt that did run is never counted twice. A frozen server thus fails a settle after the
longer of the two bounds, not one bound per attempt. The client itself sends a command
again once when a cut connection lost its reply: every write that would change something
the second time (an append to a history, a spend, a grant's use, an outbox claim) carries a
token for that (:mod:`._once`), and a vote finds its own among the votes.

The server also holds each request's history (kept for good, or ``audit_retention``) and
the spend-once ledger (:class:`~roomkit.stores.SpendLedger`, keys
``<prefix>:ledger:<entry>``, each expiring with its entry) of the desk's links and tokens.

The store talks to one server (a primary, with or without replicas). The scripts find a
record's index keys from the record itself, which Redis Cluster does not allow.

Needs the ``redis`` extra (``pip install -e '.[redis]'`` in roomkit's checkout).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from redis.asyncio import Redis

from roomkit.core.exceptions import StoreClosedError, StoreError, StoreNotFoundError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome, check_history, check_insertable, seconds, storable_id
from roomkit.stores._facade import GrantingFacade
from roomkit.stores._opening import SharedOpening
from roomkit.stores._quorum import Ballot, Judgement
from roomkit.stores._records import FORMAT, NONE, decode
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.stores.grants import GrantedHistory, GrantedInsert
from roomkit.stores.outbox import KEEP_DONE, Outbox
from roomkit.stores.redis import _history
from roomkit.stores.redis import _inserts as inserts
from roomkit.stores.redis import _scripts as scripts
from roomkit.stores.redis._approvals import Approvals
from roomkit.stores.redis._batch import ScriptBatcher
from roomkit.stores.redis._changes import changes_since, log_keys
from roomkit.stores.redis._feed import ChangeFeed
from roomkit.stores.redis._granted import INSERT_GRANTED, INSERT_GRANTED_SETTLED, insert_granted
from roomkit.stores.redis._grants import RedisGrants
from roomkit.stores.redis._link import (
    DEFAULT_URL,
    check_persistence,
    connect,
    describe,
    glob_escape,
    guard,
    store_timeout,
    text,
)
from roomkit.stores.redis._outbox import RedisOutbox
from roomkit.stores.redis._pools import opening, shut
from roomkit.stores.redis._reads import Reads
from roomkit.stores.redis._settling import Settling, unreadable
from roomkit.stores.redis._spending import Spending
from roomkit.stores.redis._trail import RedisTrail

__all__ = ["DEFAULT_URL", "RedisStore"]

logger = logging.getLogger("roomkit.tools.human_input.stores.redis")

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT
_PURGE_BATCH = 256


class RedisStore(GrantingFacade):
    """A :class:`~roomkit.stores.base.DurableStore` on a Redis server.

    Its change feed is a pub/sub subscription: it covers this store's own writes at once,
    and again when the server's message comes back, and sends
    :attr:`~roomkit.stores.PendingChangeKind.RESYNC` each time the
    subscription goes live (on the first connection and after every reconnect). A settle
    is as durable as the server's ``appendfsync`` makes it.

    Args:
        url: the server, as a ``redis://``, ``rediss://`` or ``unix://`` URL (the client's
            options such as ``?socket_timeout=2`` go in its query, and so may the store's
            ``timeout``: ``?timeout=2``). The default is ``redis://127.0.0.1:6379/0``.
        client: an existing ``redis.asyncio.Redis`` client to use instead of ``url``; the
            store does not close it. The store reads replies as bytes: given a client made
            with ``decode_responses=True``, it uses a client of its own instead, with the
            same connection settings and a pool of the same kind, which it closes.
        prefix: the first part of every key and of the events channel, so that several
            stores share one database.
        retention_seconds: how long a settled record stays replayable (and its key keeps
            re-attaching); finite, since the server expires it. ``0`` switches replay off:
            a record then stays only for the ``SETTLED_GRACE`` (10 s) a waiter in another
            process needs to read it, as does any shorter retention.
        backstop_interval: seconds between a waiter's looks at what changed (one read of the
            store's change log), in case a change hint was lost.
        clock: the store's clock, in seconds since the epoch; deadlines and retention are
            measured on it.
        settle_retry: seconds a settle whose reply was lost keeps running again (with its
            settle token) until the server answers, counted from when the outage's first
            unanswered attempt was sent; ``0`` gives up at once.
        outbox_retention_seconds: how long the server keeps a request's outbox entries once
            it ended and all were sent or given up (finite: the server expires them).
        audit_retention: seconds a closed request's history stays after its last entry
            (at least ``retention_seconds``), expired by the server on its own clock;
            ``None`` (the default) keeps every history.
        create: ``True`` (the default): the store's keys are written as it is used, on any
            database. ``False``: the database must hold a store under ``prefix`` already
            (one of the keys a store leaves for good: the change log's counter, the room
            store's format version, the checkpoints); without one, the first use
            raises :class:`~roomkit.core.exceptions.StoreNotFoundError` and writes nothing
            (for a program that only reads a store).
        timeout: seconds any call waits for the server (connecting and the client's own
            retries included) before it raises StoreUnavailableError saying the server did
            not answer; a settle running again after a fault takes up to ``settle_retry``
            when that is longer. ``None`` (the default) takes the URL's ``?timeout=``, else
            5 s. The calls that go through every key (:meth:`purge_expired`,
            the audit trail's) take as long as the keys need, each round trip on the
            client's own socket timeout.

    Raises:
        TypeError: an argument has the wrong type, or both ``url`` and ``client`` are given.
        ValueError: an argument is out of range, the URL is not a Redis URL, or its
            ``timeout`` is not a positive number of seconds or is given beside ``timeout=``;
            or the client decodes replies on a pool the store cannot copy without decoding
            (a subclass of redis-py's pools): pass one made with ``decode_responses=False``.

    Use it as an async context manager, or call :meth:`open` and :meth:`close`::

        async with RedisStore("redis://cache.internal:6379/2") as store:
            handler = HumanInputHandler(store=store)
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | None = None,
        prefix: str = "roomkit",
        retention_seconds: float = 86_400,
        backstop_interval: float = 0.25,
        clock: Callable[[], float] = time.time,
        settle_retry: float = 5.0,
        outbox_retention_seconds: float = KEEP_DONE,
        audit_retention: float | None = None,
        timeout: float | None = None,
        create: bool = True,
    ) -> None:
        super().__init__(
            retention_seconds=seconds("retention_seconds", retention_seconds, zero=True),
            backstop_interval=backstop_interval,
            clock=clock,
            settle_retry=settle_retry,
            logger=logger,
            audit_retention=audit_retention,
        )
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix must be a non-empty str, got {prefix!r}")
        url, timeout = store_timeout(url, timeout)
        self.timeout = timeout
        """Seconds a call waits for the server before it counts as not answering."""
        client, self._owned = connect(url, client)
        self.prefix = prefix
        """The first part of every key and of the events channel."""
        keep = seconds("outbox_retention_seconds", outbox_retention_seconds, zero=True)
        self.outbox_retention = keep
        """Seconds the server keeps a request's finished outbox entries."""
        self._client = client
        self.outbox: Outbox = RedisOutbox(self)
        """The notification outbox beside the requests, on the same server (one per store)."""
        self.grants = RedisGrants(self)
        """The standing grants beside the requests, on the same server (one per store)."""
        self._where = describe(client)
        self._layout = scripts.Layout(prefix)
        self._insert = ScriptBatcher(client, client.register_script(inserts.INSERT))
        self._settled_insert = ScriptBatcher(client, client.register_script(inserts.INSERT_SETTLED))
        self._insert_granted = client.register_script(INSERT_GRANTED)
        self._insert_granted_settled = client.register_script(INSERT_GRANTED_SETTLED)
        self._set_deadline = client.register_script(scripts.SET_DEADLINE)
        self._purge = client.register_script(scripts.PURGE)
        self._feed = ChangeFeed(client.connection_pool, self._layout.channel, where=self._where)
        log = self._layout.changes
        self._look = lambda mark: changes_since(
            self._ensure_open, client, log, (self._where, self.timeout), mark
        )
        audit_ms = self._audit_ms = scripts.audit_ms(self.audit_retention)
        self.trail = RedisTrail(client, self._layout, self, self._ensure_open)
        """The store's audit trail: its signed heads and checkpoints (``ROOMKIT_AUDIT_KEY``)."""
        heads = _history.Heads(self.trail.anchoring)  # this process's last of each chain
        self._heads = heads
        where, layout = self._where, self._layout
        knowing = partial(self._settle_knowing, since_sent=True)
        within = self.timeout
        self._reads = Reads(client, layout, where, within, self._retained, self._cutoff)
        self._settling = Settling(
            client, layout, where, within, heads, audit_ms, self._feed, knowing
        )
        self._approvals: Approvals = Approvals(
            client, layout, where, within, heads, audit_ms, self.fetch
        )
        self._spending = Spending(
            client, layout, where, within, self._ensure_open, self.clock, knowing
        )
        self._opened = False
        self._checked = False
        self._create = bool(create)
        self._opening = SharedOpening()

    @property
    def where(self) -> str:
        """The server, as a URL without its password."""
        return self._where

    async def open(self) -> None:
        """Check that the server answers and start the change feed if anyone listens.

        Redis needs no schema; the scripts load themselves on first use. The first open
        reads the server's persistence settings (``appendonly``, ``appendfsync``, ``save``)
        and logs a warning naming what a restart or a crash would lose, or that they could
        not be read.

        Raises:
            StoreUnavailableError: the server cannot be reached.
            StoreNotFoundError: opened with ``create=False``, and the database holds no
                store under the prefix.
        """
        self._feed.closed = False
        shut(self._client, False)
        if not self._opened:
            await self._opening.join(self._open_once)
        self._feed.start()

    async def _open_once(self) -> None:
        """The opening itself: the server answers, and its persistence is read once. One
        that fails leaves no connection of the store's own open."""
        async with opening(self._client, owned=self._owned):
            async with guard(self._where, within=self.timeout):
                await self._client.ping()
                found = self._create or await self._client.exists(*self._layout.marks)
            if not found:
                raise StoreNotFoundError(
                    f"the Redis database at {self._where} holds no roomkit store under the "
                    f"prefix {self.prefix!r} (no key {self._layout.marks[0]}): nothing was "
                    "written to it"
                )
            if not self._checked:
                await check_persistence(self._client, self._where, logger, within=self.timeout)
                self._checked = True
        self._opened = True

    async def close(self) -> None:
        """Stop the change feed and disconnect the store's own client (made from the URL, or
        beside a given client that decodes replies; a given client stays open); idempotent.
        Then every call but :meth:`open` raises StoreClosedError, instead of connecting
        again unasked."""
        self._opened, self._feed.closed = False, True
        # A call in flight goes on, and gives back its connection once it ends: closed then.
        shut(self._client, True)
        await self._feed.stop()
        if self._owned:
            await self._client.aclose(close_connection_pool=True)

    async def insert(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]] = ()
    ) -> tuple[PendingInput, bool]:
        """Record a new pending request; ``(record, True)`` when it was created.

        When ``request.key`` names a retained record, nothing is written and
        ``(that record, False)`` comes back. The same request inserted again (a retry after
        a lost reply) finds itself and is reported created. ``history`` (its ``created``
        entry) starts the request's chain in the insert's script, when it is created.

        Raises:
            ValueError: the request is not pending.
            InvalidTextError: a text of the request holds a lone surrogate.
            StoreError: another request already has this id.
            StoreUnavailableError: the server cannot be reached.
        """
        check_insertable(request)
        return await self._inserted(request, history, settled=False)

    async def _insert_settled(
        self, request: PendingInput, history: Sequence[dict[str, Any]]
    ) -> tuple[PendingInput, bool]:
        return await self._inserted(request, history, settled=True)

    async def _inserted(
        self, request: PendingInput, history: Sequence[dict[str, Any]], *, settled: bool
    ) -> tuple[PendingInput, bool]:
        entries = check_history(history)
        await self._ensure_open()
        pending_id = request.pending_id
        head = self._heads.guess(pending_id)
        script = self._settled_insert if settled else self._insert
        while True:
            lines, after, signed = self._heads.link(pending_id, entries, head)
            keys, args, fields = inserts.insert_call(
                self._layout,
                request,
                self._cutoff(),
                (head[0], lines, signed),
                self._settling_at(self.clock()) if settled else None,
            )
            async with guard(self._where, within=self.timeout):
                reply = await script(keys, args)
            if not (isinstance(reply, list) and text(reply[0]) == inserts.HEAD):
                break
            head = _history.Heads.moved(pending_id, reply[1])
        if isinstance(reply, bytes | str) and text(reply) == inserts.DUPLICATE:
            raise StoreError(f"pending record {pending_id!r} is already stored at {self._where}")
        created = bool(int(reply[0]))
        record = decode(scripts.unpack(reply[1]) if len(reply) > 1 else fields, hashed=True)
        if created:
            if lines:
                self._heads.wrote(pending_id, head[0] + len(lines), after)
            self._created(record)
        return record, created

    def _settling_at(self, now: float) -> tuple[float, float, int | str]:
        """What an insert of a request settled as it is made at ``now`` writes besides it:
        its time, and how long it and its history are kept."""
        return now, self._keep, self._audit_ms

    async def _insert_with_grant(
        self, request: PendingInput, grant_id: str, history: GrantedHistory
    ) -> GrantedInsert | None:
        return await insert_granted(self, request, grant_id, history)

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled (within retention), or ``None``.

        Raises:
            CorruptRecordError: the key holds something this library did not write.
            StoreUnavailableError: the server cannot be reached.
        """
        if not storable_id(pending_id):
            return None
        await self._ensure_open()
        return await self._reads.fetch(pending_id)

    async def _apply_deadline(self, pending_id: str, deadline: float) -> float | None:
        await self._ensure_open()
        async with guard(self._where, pending_id, within=self.timeout):
            reply = await self._set_deadline(
                keys=[self._layout.record(pending_id), self._layout.changes],
                args=[repr(deadline), NONE, FORMAT, pending_id],
            )
        if reply is None:
            return None
        answer = text(reply)
        if answer == scripts.CORRUPT:
            raise unreadable(pending_id, self._where)
        return float(answer)

    async def _settle_checked(
        self, pending_id: str, status: PendingInputStatus, token: str, outcome: Outcome
    ) -> PendingInput | None:
        """One settle in a Lua script: the outcome is as durable as the server's
        ``appendfsync`` makes it; a lost reply runs the script again with the token. A win
        records ``outcome.grant`` in the same script.

        Its entries are linked to the head this process believes in; when that moved, or
        the deadline's entry is needed, the script writes nothing and says so: run again."""
        await self._ensure_open()
        return await self._settling.settle(
            pending_id, status, token, outcome, now=self.clock(), keep=self._keep
        )

    async def mark_announced(self, pending_id: str) -> None:
        """Record that the request was announced; an unknown id is ignored.

        Raises:
            StoreUnavailableError: the server cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        await self._ensure_open()
        async with guard(self._where, pending_id, within=self.timeout):
            # Deleting a field never creates the record: a request gone meanwhile stays gone.
            await self._client.hdel(self._layout.record(pending_id), scripts.UNANNOUNCED)

    async def purge_expired(self) -> int:
        """Drop records settled longer ago than the retention on :attr:`clock`.

        The server expires them on its own clock as well; this catches up when the store's
        clock runs ahead (a test's fake clock, a server clock that lags).

        Raises:
            StoreUnavailableError: the server cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        await self._ensure_open()
        cutoff = repr(self._cutoff())
        pattern = glob_escape(self._layout.records) + "*"
        args = [cutoff, NONE, FORMAT, self._layout.keys]
        gone = seen = 0
        batch: list[Any] = []
        # A bulk call: as long as the records take, each round trip on the client's timeout.
        async with guard(self._where, within=None):
            async for key in self._client.scan_iter(match=pattern, count=_PURGE_BATCH):
                batch.append(key)
                seen += 1
                if len(batch) == _PURGE_BATCH:
                    gone += int(await self._purge(keys=batch, args=args))
                    batch = []
            if batch:
                gone += int(await self._purge(keys=batch, args=args))
            await scripts.trim_settled(self._client, self._layout, cutoff, _PURGE_BATCH)
            if gone == seen:
                # No record is left to change: the log goes too (a look from before it
                # starts over, which is safe even if a create came meanwhile).
                await self._client.delete(*log_keys(self._layout.changes))
        return gone

    # -- approvals: votes -----------------------------------------------------------------------

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """Record a vote on a quorum approval in one script, with its history entries and,
        when it decides, the settle (:mod:`~roomkit.stores.redis._votes`);
        a lost reply runs it again with its token, which finds it counted if it was.

        Raises:
            StoreUnavailableError: the store stayed away for :attr:`settle_retry` seconds;
                whether the vote was recorded is unknown.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        if not storable_id(pending_id):
            return Judgement(False)
        await self._ensure_open()

        async def expire(judgement: Judgement) -> object:
            late = Outcome(None, None, False, None, judgement.entries)
            return await self._settle_checked(pending_id, _TIMED_OUT, ballot.token, late)

        judgement = await self._settle_knowing(
            lambda: self._approvals.voting.cast(pending_id, ballot, self.clock, self._keep, expire),
            pending_id,
            self._where,
            since_sent=True,
        )
        if judgement.accepted and judgement.write:
            kind = PendingChangeKind.SETTLED if judgement.settles else PendingChangeKind.VOTED
            self._feed.emit(PendingChange(kind, pending_id))
        return judgement

    async def _parts_ready(self) -> None:
        await self._ensure_open()

    async def _ensure_open(self) -> None:
        if self._feed.closed:
            raise StoreClosedError.of("Redis", self._where)
        if not self._opened:
            await self.open()
        elif self._feed.listening:
            self._feed.start()

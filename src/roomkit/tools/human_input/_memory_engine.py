"""The memory engine: requests in a :class:`PendingStore` of this process, settled at once.

A settle is the store's check-and-set, synchronous, so ``resolve()`` knows at once whether it
won, and the winner wakes the waits on the request in the same call. Each wait parks on a
future of its own, held by the request (one future, or a list when several wait); a settle
completes them with the settled request. Deadlines share one loop timer
(:class:`DeadlineQueue`): a request costs no timer handle of its own.

This is the path of every question a tool asks in one process: it allocates the request, its
future and nothing else (no task, no timer, no closure), and keeps few locals in the
suspended wait.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from roomkit.core.exceptions import AsyncSettleRequiredError, UnknownRequestError
from roomkit.models.clock import utcnow
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import Ballot, Judgement, MemoryStore, judge, widened
from roomkit.stores.base import (
    ChangeListener,
    PendingChange,
    PendingChangeKind,
    PendingStore,
)
from roomkit.tools.human_input._announce import Announcer, emit
from roomkit.tools.human_input._checks import outcome
from roomkit.tools.human_input._deadlines import QUEUED, DeadlineQueue
from roomkit.tools.human_input._in_transaction import Settlement, given, in_transaction
from roomkit.tools.human_input._memory_reads import MemoryReads
from roomkit.tools.human_input._memory_trail import (
    ASKED_ONLY,
    link_now,
    recorded,
    settled_record,
)
from roomkit.tools.human_input._withdrawing import HANDLER_CLOSED, RELEASED, withdrawn

if TYPE_CHECKING:
    from roomkit.tools.human_input._answering import Answer

__all__ = ["MemoryEngine"]

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED
_TIMED_OUT = PendingInputStatus.TIMED_OUT
_CREATED = PendingChangeKind.CREATED
_SETTLED = PendingChangeKind.SETTLED
_VOTED = PendingChangeKind.VOTED
_QUORUM_ONLY = (
    "{method}() cannot vote on a quorum approval: each vote names its approver, use "
    "`await handler.aresolve(pending_id, approve(), by=actor)`"
)

_InvalidStateError = asyncio.InvalidStateError
_get_running_loop = asyncio.get_running_loop
_time_ns = time.time_ns
_monotonic = time.monotonic
_Future = asyncio.Future
_LOOP_TIME = asyncio.BaseEventLoop.time
_LOOP_FUTURE = asyncio.BaseEventLoop.create_future


class MemoryEngine(MemoryReads):
    """Requests, waits and deadlines in this process, over a synchronous store."""

    __slots__ = (
        "_active",
        "_announcer",
        "_deadlines",
        "_listeners",
        "_loop",
        "_order",
        "_plain",
        "_quorums",
        "_retained",
        "_stock",
        "_store",
        "_trail",
        "store",
    )

    durable = False
    inserts_settled = False

    def __init__(self, store: PendingStore, announcer: Announcer, *, trail: bool) -> None:
        self._store = self.store = store
        self._announcer = announcer
        # Whether the requests carry their histories (:mod:`._memory_trail`), written in
        # the same step as what they record; a store keeping a history of its own is not
        # written to here.
        self._trail = trail
        self._listeners: list[ChangeListener] = []
        self._deadlines = DeadlineQueue(self._expire)
        # On a plain MemoryStore keeping no histories past its retention (the default), a
        # new request, an answer and a collected wait take the store's steps on its dicts
        # without a call (see MemoryStore.parts). Any other store is called.
        self._plain: MemoryStore | None = None
        self._active: dict[str, PendingInput] | None = None
        self._retained: dict[str, PendingInput] = {}
        self._order: deque[str] = deque()
        if type(store) is MemoryStore and store.audit_retention == store.retention:
            self._plain = store
            self._active, self._retained, self._order = store.parts()
        # The open quorum approvals, whose answers are votes: a plain resolve() refuses them.
        self._quorums: set[str] = set()
        # The loop of the last wait, and whether it is one of asyncio's own (see listen).
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stock = False

    # -- creating ----------------------------------------------------------------------------

    async def create(
        self, *arguments: Any, reattaching: object = None, **options: Any
    ) -> PendingInput:
        """:meth:`add`, awaited where the durable engine's ``create`` is. ``reattaching``
        is the durable engine's: a request kept here is never left open by a process that
        stopped."""
        return self.add(*arguments, **options)

    def add(
        self,
        request: PendingInput,
        timeout: float | None,
        history: tuple[dict[str, Any], ...] | None,
        announce: bool = True,
    ) -> PendingInput:
        """Store ``request`` (or return the request its key names) and announce it (unless
        ``announce`` is false: nobody is to be asked); ``history`` starts its history in the
        same step when it is created (``None``: a question's ``created`` entry, made from the
        request when the history is read). Nothing here awaits: the handler calls it without
        a coroutine of its own."""
        active = self._active
        if active is not None and request.key is None:
            active[request.pending_id] = request
        else:
            store = self._store
            if request.key is not None:
                existing = store.by_key(request.key)
                if existing is not None:
                    return existing
            store.add(request)
        if request.quorum is not None:
            self._quorums.add(request.pending_id)
        if self._trail:
            if history is None:
                request._history = ASKED_ONLY
            else:
                link_now(request, history)
        if timeout is not None:
            loop = _get_running_loop()
            request.deadline = when = loop.time() + timeout
            self._deadlines.add(loop, request, when)
        announcer = self._announcer
        if announce and (announcer.callbacks or announcer.default is not None):
            announcer.announce(request)
        if self._listeners:
            emit(self._listeners, PendingChange(_CREATED, request.pending_id))
        return request

    def add_settled(
        self,
        request: PendingInput,
        status: PendingInputStatus,
        text: str,
        by: str | None,
        history: tuple[dict[str, Any], ...],
    ) -> None:
        """Store ``request`` settled by ``by`` as it is made, and retire it: a call decided
        without anyone (nobody is told, nobody waits), in one step. ``history`` is its whole
        history, made for it alone and changed by no one after: kept as it is, linked when
        read. The listeners hear of its creation, then of its outcome, once both are stored."""
        store = self._store
        store.add(request)
        if self._trail:
            request._history = history
        store.settle(request.pending_id, status, **given(status, text, by))
        if self._listeners:
            emit(self._listeners, PendingChange(_CREATED, request.pending_id))
            emit(self._listeners, PendingChange(_SETTLED, request.pending_id))
        store.retire(request)

    # -- waiting -----------------------------------------------------------------------------

    def listen(self, pending_id: str, timeout: float | None) -> Awaitable[PendingInput]:
        """What a wait awaits: the settled request, once an answer or the deadline comes.

        Raises:
            UnknownRequestError: the id is neither active nor retained.
        """
        request = self._store.get(pending_id)
        if request is None:
            settled = self._store.get_settled(pending_id)
            if settled is None:
                raise UnknownRequestError(f"No pending request with id {pending_id}")
            return _ready(settled)
        if request.status is not _PENDING:
            return _ready(request)
        # Completed with the settled request, which the wait then collects. Made without a
        # loop, it takes the running one (one lookup for both).
        waiter: asyncio.Future[Any] = _Future()
        loop = waiter.get_loop()
        if loop is not self._loop:
            self._loop = loop
            # On asyncio's own loops the clock is time.monotonic and a future is an
            # asyncio.Future: both are reached without a call into the loop's Python code.
            kind = type(loop)
            self._stock = kind.time is _LOOP_TIME and kind.create_future is _LOOP_FUTURE
        stock = self._stock
        if not stock:
            waiter = loop.create_future()
        if timeout is not None:
            when = (_monotonic() if stock else loop.time()) + timeout
            deadline = request.deadline
            # A later wait may bring the deadline forward, never push it back.
            if deadline is None or when < deadline:
                request.deadline = when
                deadlines = self._deadlines
                if (
                    request._deadline_entry is None
                    and deadlines.timer_when <= when
                    and deadlines.last <= when
                    and deadlines.loop is loop
                ):
                    deadlines.queue.append(request)
                    deadlines.last = when
                    request._deadline_entry = QUEUED
                else:
                    deadlines.add(loop, request, when)
        waiters = request._waiters
        if waiters is None:
            request._waiters = waiter
        elif isinstance(waiters, list):
            waiters.append(waiter)
        else:
            request._waiters = [waiters, waiter]
        return waiter

    def collect(self, request: PendingInput) -> str:
        """Retire the settled request (wait owns the cleanup); its answer, or its error."""
        active = self._active
        if active is not None and request.key is None:
            active.pop(request.pending_id, None)
        else:
            self._store.retire(request)
        if request.status is _RESOLVED:
            return request.result or ""
        return outcome(request)

    async def abandon(self, pending_id: str) -> None:
        """A wait was cut: withdraw its request, so that a late answer is refused."""
        self.release(pending_id)

    # -- settling ----------------------------------------------------------------------------

    def resolve(self, pending_id: str, result: str) -> bool:
        if self._quorums and pending_id in self._quorums:
            raise AsyncSettleRequiredError(_QUORUM_ONLY.format(method="resolve"))
        active = self._active
        if active is None:
            request = self._store.settle(pending_id, _RESOLVED, result=result)
            if request is None:
                return False
        else:
            # The store's settle, inline: this is every answered question's path.
            request = active.get(pending_id)
            if request is None or request.status is not _PENDING:
                return False
            request.status = _RESOLVED
            request.result = result
            plain: Any = self._plain
            retention = plain.retention
            if retention:
                retained = self._retained
                retained[pending_id] = request
                order = self._order
                order.append(pending_id)
                if len(order) > retention:
                    evicted = retained.pop(order.popleft())
                    if evicted.key is not None and evicted.pending_id not in active:
                        plain.forget(evicted)
        if self._trail:
            # The settled entry as its time alone (an int stands for a resolve by the
            # handler), made into an entry when the history is read; a question asked and
            # resolved, the common history, is that int alone, without a tuple.
            stamp = _time_ns()
            history = request._history
            request._history = stamp if history is ASKED_ONLY else (*recorded(request), stamp)
        # What _settled does, inline. A deadline answered in its turn leaves the queue's head.
        entry = request._deadline_entry
        if entry is not None:
            queue = self._deadlines.queue
            if entry is QUEUED and queue[0] is request:
                queue.popleft()
                request._deadline_entry = None
            else:
                self._deadlines.discard(request)
        if self._listeners:
            emit(self._listeners, PendingChange(_SETTLED, pending_id))
        waiters: Any = request._waiters
        if waiters is not None:
            request._waiters = None
            if type(waiters) is list:
                _wake_all(waiters, request)
            else:
                # One wait on one future, the common case, woken here without a call; a
                # future cancelled with its wait takes no result.
                try:  # noqa: SIM105 (suppress() would cost a context manager per answer)
                    waiters.set_result(request)
                except _InvalidStateError:
                    pass
        return True

    def reject(self, pending_id: str, reason: str) -> bool:
        if self._quorums and pending_id in self._quorums:
            raise AsyncSettleRequiredError(_QUORUM_ONLY.format(method="reject"))
        request = self._store.settle(pending_id, _REJECTED, reason=reason)
        return self._won(request, (settled_record(_REJECTED.value),))

    def release(self, pending_id: str) -> bool:
        request = self._store.get(pending_id)
        if request is None:
            return False
        self._withdraw(request, RELEASED)
        return True

    async def arelease(self, pending_id: str, reason: str | None = None) -> bool:
        """Withdraw the request and drop it, as :meth:`release` does; ``True`` only if this
        call withdrew it, as on every store (a drop alone leaves nothing a store records)."""
        request = self._store.get(pending_id)
        if request is None:
            return False
        return self._withdraw(request, RELEASED, said=reason)

    async def settle(self, settlement: Settlement) -> bool:
        """Run ``settlement``; its history goes into the request's history in the same step
        as the settle."""
        won = self._store.settle(settlement.pending_id, settlement.status, **settlement.outcome)
        return self._won(won, _copied(settlement.history))

    async def add_approvers(self, pending_id: str, actors: tuple[str, ...]) -> bool:
        """Add ``actors`` to the approvers of the open request; ``False`` when not open."""
        request = self._store.get(pending_id)
        if request is None or request.status is not _PENDING:
            return False
        request.approvers, request.voters = widened(
            request.approvers, request.voters, request.quorum, actors
        )
        return True

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """Judge ``ballot`` on the request and record it, settling the request when the vote
        decides it; nothing awaits in between, so racing votes take turns."""
        store = self._store
        request = store.get(pending_id)
        if request is None:
            return judge(store.get_settled(pending_id), ballot, None, utcnow())
        judgement = judge(request, ballot, _get_running_loop().time(), utcnow())
        after = judgement.record
        if not judgement.write or after is None:
            return judgement
        if after.status is _TIMED_OUT:
            self._expire(request)
            return Judgement(False, request)
        request.votes, request.approvers = after.votes, after.approvers
        request.arguments, request.arguments_digest = after.arguments, after.arguments_digest
        entries = judgement.entries
        if after.status is _PENDING:
            if self._trail:
                request._history = (*recorded(request), *_copied(entries))
            if self._listeners:
                emit(self._listeners, PendingChange(_VOTED, pending_id))
        else:
            won = store.settle(
                pending_id,
                after.status,
                result=after.result,
                reason=after.reject_reason,
                settled_by=after.settled_by,
            )
            self._won(won, _copied(entries))
        return Judgement(True, request, write=True, entries=entries)

    async def time_out(self, request: PendingInput) -> PendingInput | None:
        """Record the timeout of ``request``, past its deadline; the request as it stands."""
        self._expire(request)
        return request

    async def close(self, channel_id: str | None) -> None:
        """Withdraw the active requests (of ``channel_id``, or all); their waits wake."""
        for request in self._store.active():
            if channel_id is None or request.channel_id == channel_id:
                self._withdraw(request, HANDLER_CLOSED)

    def _won(self, request: PendingInput | None, history: tuple[object, ...]) -> bool:
        """Record ``history`` (entries, or the records of :mod:`._memory_trail`) and wake the
        waits on ``request`` when the store says this settle won it: in the settle's own
        step, so a woken wait finds the entries."""
        if request is None:
            return False
        if self._trail:
            request._history = (*recorded(request), *history)
        self._settled(request)
        return True

    def _withdraw(self, request: PendingInput, reason: str, said: str | None = None) -> bool:
        """Withdraw ``request`` for the caller's reason (``said``, which its history names),
        else the handler's own ``reason``, and retire it; ``True`` if it was still open."""
        reason = reason if said is None else said
        won = self._store.settle(request.pending_id, _REJECTED, reason=reason, withdrawn=True)
        withdrew = self._won(
            won, withdrawn(said) if said is not None else (settled_record(_REJECTED.value, True),)
        )
        self._store.retire(request)
        return withdrew

    def _expire(self, request: PendingInput) -> None:
        won = self._store.settle(request.pending_id, _TIMED_OUT)
        self._won(won, (settled_record(_TIMED_OUT.value),))

    def _settled(self, request: PendingInput) -> None:
        """Wake the request's waits and drop its deadline, once the store recorded a win."""
        if request._deadline_entry is not None:
            self._deadlines.discard(request)
        if self._quorums and request.quorum is not None:
            self._quorums.discard(request.pending_id)
        if self._listeners:
            emit(self._listeners, PendingChange(_SETTLED, request.pending_id))
        if request._waiters is not None:
            _wake(request)

    async def answer(self, answer: Answer, connection: Any) -> bool:
        """Settle ``answer`` (``aresolve``) against the request as held here, read without
        a round trip; ``True`` if it won. ``connection`` is refused: no transaction of the
        caller's reaches this store (:func:`in_transaction` says so)."""
        store = self._store
        pending_id = answer.pending_id
        request = store.get(pending_id) or store.get_settled(pending_id)
        if connection is None:
            return await answer.decide(request, self.settle)
        return await answer.decide(request, in_transaction(store, request, connection))


def _wake(request: PendingInput) -> None:
    """Complete the settled request's waits (one future, or a list of them) with it."""
    waiters: Any = request._waiters
    request._waiters = None
    if type(waiters) is list:
        _wake_all(waiters, request)
    elif not waiters.done():
        waiters.set_result(request)


def _wake_all(waiters: list[asyncio.Future[Any]], request: PendingInput) -> None:
    """Complete each of ``waiters`` still waiting with the settled ``request``."""
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(request)


def _copied(entries: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """``entries`` as the history keeps them until it is read: copies, so that a caller
    changing its dicts afterwards changes nothing recorded."""
    return tuple([dict(entry) for entry in entries])


async def _ready(request: PendingInput) -> PendingInput:
    """A wait on a request already settled: nothing to park on."""
    return request

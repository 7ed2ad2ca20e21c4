"""What the durable stores share: argument checks, ``async with``, listeners and retention.

:class:`DurableBase` is the base of the SQLite, Redis and PostgreSQL stores. It checks and
keeps the clock, the retention and the backstop interval, opens and closes the store around
``async with``, hands listeners to the store's change feed, says which outcomes the
retention still shows, and retries a settle whose outcome a fault left unknown. The functions
below check a request, an outcome, a deadline or a settle token before anything reaches
storage, with the same message whichever store is used, and put listings in the one order
every store uses.

A settle carries a settle token, a random id made once per call and recorded with the
outcome by the same check-and-set. When a fault hides the outcome (the reply was lost, the
commit's result is unknown), the store runs the same check-and-set again with the same token:
finding its own token on a settled record, it reports the earlier win; finding the request
still pending, it settles it now. Either way the caller learns what happened, and only a store
that stays away for ``settle_retry`` seconds leaves the outcome unknown.

The base also answers :meth:`DurableBase.changes_since` from the store's own change log
(``_look``), once the mark is checked.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.core.lifecycle import Opened
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import (
    Outcome,
    check_audit_retention,
    check_deadline,
    check_settle,
    creation_order,
    seconds,
)
from roomkit.stores._listener_feed import ListenerFeed
from roomkit.stores.base import (
    ChangeListener,
    ChangeMark,
    ChangesSince,
    PendingChange,
    PendingChangeKind,
)

__all__ = [
    "LISTED",
    "SETTLED_GRACE",
    "DurableBase",
]

T = TypeVar("T")

_PENDING = PendingInputStatus.PENDING
_FIRST_PAUSE = 0.05
_LONGEST_PAUSE = 1.0
"""Seconds between the re-runs of a settle whose outcome is unknown: doubling, capped."""
_SAME_OUTAGE = 30.0
"""Seconds between two failed settles within which they count as one outage."""
_SETTLE_AGAIN = (
    "settle it again once the store is back (aresolve with the same answer and by= returns "
    "True if this answer was recorded), or read the request"
)
"""What to do about a settle whose outcome stayed unknown."""

SETTLED_GRACE = 10.0
"""Seconds a settled outcome stays readable at the least, whatever the retention.

A waiter in another process reads the outcome after it was settled: when a change hint, a
poll or the end of a short outage tells it to, on a clock that may disagree by a second.
A shorter retention (``0`` included) would lose that answer, so it is raised to this.
"""

LISTED = 1024
"""The most requests one look at a change log names: when more changed since the mark, the
look says it cannot tell, and waiters read what they watch (fewer reads than the ids)."""


class DurableBase(Opened):
    """The part of a durable store that does not depend on where the records live.

    A subclass builds its change feed as ``_feed`` and the reader of its change log as
    ``_look``, checks ``retention_seconds`` against its
    own bounds before passing it on, and supplies :meth:`open` and :meth:`close`.

    Args:
        retention_seconds: how long a settled outcome stays readable, already checked; an
            outcome stays readable for :data:`SETTLED_GRACE` at the least (``0`` means no
            replay beyond what waits elsewhere need).
        backstop_interval: seconds between a waiter's looks at what changed; positive and
            finite.
        clock: the store's clock, in seconds since the epoch.
        settle_retry: seconds, from the start of an outage, for which a settle whose
            outcome a fault left unknown is run again (with its settle token); ``0`` runs
            it once.
        logger: where a settle that is run again is reported.
        audit_retention: seconds a request's history stays once the request is closed,
            after its last entry (at least ``retention_seconds``); ``None`` keeps it.

    Raises:
        TypeError: ``clock`` is not callable, or a number of seconds is not a number.
        ValueError: ``backstop_interval`` is not positive and finite, ``settle_retry``
            is negative or infinite, or ``audit_retention`` is below ``retention_seconds``.
    """

    _feed: ListenerFeed
    _look: Callable[[ChangeMark | None], Awaitable[ChangesSince]]

    def __init__(
        self,
        *,
        retention_seconds: float,
        backstop_interval: float,
        clock: Callable[[], float],
        settle_retry: float,
        logger: logging.Logger,
        audit_retention: float | None = None,
    ) -> None:
        if not callable(clock):
            raise TypeError(f"clock must be callable, got {type(clock).__name__}")
        self.audit_retention = check_audit_retention(audit_retention, retention_seconds)
        """Seconds a closed request's history stays after its last entry; ``None``: for good."""
        self.retention_seconds = retention_seconds
        """How long a settled outcome stays readable, in seconds on :attr:`clock`, as given.

        Outcomes stay readable for :data:`SETTLED_GRACE` seconds at the least."""
        self._keep = max(retention_seconds, SETTLED_GRACE)
        self.backstop_interval = seconds("backstop_interval", backstop_interval, zero=False)
        """Seconds between a waiter's looks at what changed, in case a change hint was lost."""
        self.clock = clock
        """The store's clock: deadlines and retention are measured on it."""
        self.settle_retry = seconds("settle_retry", settle_retry, zero=True)
        """Seconds a settle whose outcome a fault left unknown keeps trying to learn it."""
        self._logger = logger
        # When settles began to fail to reach the store, and last failed (loop time); None
        # while it answers.
        self._outage: tuple[float, float] | None = None

    @abstractmethod
    async def open(self) -> None:
        """Connect; idempotent (every other method opens lazily)."""

    @abstractmethod
    async def close(self) -> None:
        """Stop the change feed and disconnect; idempotent."""

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` for changes made by any process; returns the unsubscribe.

        The feed runs while anyone listens. This store's own writes reach listeners as soon
        as they are stored, and may be heard again when the feed reports them;
        :attr:`~roomkit.stores.PendingChangeKind.RESYNC` says that changes
        may have been missed and listeners should re-read what they watch.

        Raises:
            TypeError: ``listener`` is not callable.
        """
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {type(listener).__name__}")
        return self._feed.add(listener)

    def _created(self, record: PendingInput) -> None:
        """Tell this store's listeners of a request created, and of its settle when it was
        inserted settled."""
        self._feed.emit(PendingChange(PendingChangeKind.CREATED, record.pending_id))
        if record.status is not _PENDING:
            self._feed.emit(PendingChange(PendingChangeKind.SETTLED, record.pending_id, record))

    async def changes_since(self, mark: ChangeMark | None) -> ChangesSince:
        """The requests created, settled, voted on or given an earlier deadline since
        ``mark`` (from an earlier look; ``None`` starts one), in one read; see
        :class:`~roomkit.stores.base.ChangeTracking`.

        Raises:
            TypeError: ``mark`` is neither ``None`` nor a mark of this store's.
            StoreUnavailableError: the store cannot be reached.
        """
        if mark is not None and not (
            isinstance(mark, tuple) and mark and all(type(part) is int for part in mark)
        ):
            raise TypeError(f"mark must be None or one changes_since returned, got {mark!r}")
        return await self._look(mark)

    async def set_deadline(self, pending_id: str, deadline: float) -> float | None:
        """Set the deadline of a pending request unless it has an earlier one.

        Returns the deadline in force, or ``None`` when the request is not pending.

        Raises:
            ValueError: ``deadline`` is not finite.
            CorruptRecordError: the stored record's deadline cannot be read.
        """
        return await self._apply_deadline(pending_id, check_deadline(deadline))

    @abstractmethod
    async def _apply_deadline(self, pending_id: str, deadline: float) -> float | None:
        """The store's own :meth:`set_deadline`, for a deadline already checked."""

    async def settle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        withdrawn: bool = False,
        settled_by: str | None = None,
        token: str | None = None,
        history: Sequence[dict[str, Any]] = (),
    ) -> PendingInput | None:
        """The check-and-set: settle a pending request; return the record when this call won.

        As :meth:`~roomkit.stores.base.DurableStore.settle`: the outcome
        is durable before this returns (how durable, the store's class says); when a fault
        hides it, the settle runs again with its token for up to :attr:`settle_retry`
        seconds. ``history`` is appended to the request's chain with the outcome, in the
        same transaction, when this call wins (once, however often it runs again).

        Raises:
            ValueError: ``status`` is ``PENDING``, ``token`` is empty, or an entry of
                ``history`` is no entry.
            TypeError: ``history`` is not a sequence of JSON-serialisable entries.
            InvalidTextError: a text holds a lone surrogate (nothing is written).
            CorruptRecordError: the stored record cannot be read (nothing is written).
            StoreUnavailableError: the store stayed away for :attr:`settle_retry`
                seconds; whether this settle was recorded is unknown.
        """
        given = Outcome(result, reason, withdrawn, settled_by)
        return await self._settle_given(pending_id, status, token, given, history)

    async def _settle_given(
        self,
        pending_id: str,
        status: PendingInputStatus,
        token: str | None,
        given: Outcome,
        history: Sequence[dict[str, Any]],
    ) -> PendingInput | None:
        """:meth:`settle` of the outcome ``given`` as the caller gave it: checked with the
        status, the token and ``history``, then handed to :meth:`_settle_checked`."""
        checked = check_settle(pending_id, status, token, given, history)
        if checked is None:
            return None
        return await self._settle_checked(pending_id, *checked)

    @abstractmethod
    async def _settle_checked(
        self, pending_id: str, status: PendingInputStatus, token: str, outcome: Outcome
    ) -> PendingInput | None:
        """The store's own check-and-set, for arguments :meth:`settle` checked."""

    async def list_pending(
        self,
        *,
        room_id: str | None = None,
        actor_id: str | None = None,
        channel_id: str | None = None,
    ) -> list[PendingInput]:
        """The requests still pending, by creation time (then id); ``None`` filters nothing.

        A record that cannot be decoded is skipped and logged.

        Raises:
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        filters = {"room_id": room_id, "actor_id": actor_id, "channel_id": channel_id}
        # Sorted here, not by storage: the records' own times decide, so that every store
        # lists alike (SQLite keeps times as text, whose order is not the instants' once
        # times come in different zones).
        return sorted(await self._pending_records(filters), key=creation_order)

    @abstractmethod
    async def _pending_records(self, filters: Mapping[str, str | None]) -> list[PendingInput]:
        """The pending records whose fields equal ``filters`` (``None`` filters nothing)."""

    async def _settle_knowing(
        self,
        attempt: Callable[[], Awaitable[T]],
        subject: str,
        where: str,
        *,
        in_doubt: Callable[[StoreUnavailableError], bool] = lambda fault: True,
        since_sent: bool = False,
        what: str = "",
        advice: str = _SETTLE_AGAIN,
    ) -> T:
        """Run ``attempt``, one check-and-set carrying this settle's token, until it answers.

        A fault that keeps the store from answering leaves the outcome unknown: the attempt
        may have landed before its reply was lost. (``in_doubt`` says which faults do; one
        that wrote nothing is raised as it is.) Running it again is safe, since it knows
        its own token, so it runs again, with growing pauses, until the store has been
        unreachable for :attr:`settle_retry` seconds (on the event loop's clock). The time
        counts from the first failure of the outage, not of this call: once a long outage is
        known, each settle tries once more and gives up, so that a close withdrawing many
        requests does not wait out the bound for each of them. With ``since_sent`` the
        outage starts when its first failed attempt was sent, not when it failed: a store
        that fails a silent call after its own timeout has been away that long already, and
        a settle then takes the longer of the two bounds, not their sum. Another write that
        carries a token of its own (a spend of the ledger) runs the same way: ``subject`` is
        the request's id or the ledger's entry, ``what`` names the write in the messages
        (``the spend of 'link:...'``; a settle's is ``the settle of`` its ``subject``) and
        ``advice`` says what to do when its outcome stays unknown.

        Raises:
            StoreUnavailableError: the store stayed away; the message says the outcome is
                unknown and how to learn it.
        """
        loop = asyncio.get_running_loop()
        what = what or f"the settle of {subject!r}"
        sent = loop.time()
        try:
            answer = await attempt()
        except StoreUnavailableError as error:
            if not in_doubt(error):
                raise
            fault = error
        else:
            self._outage = None
            return answer
        since = self._failed(loop.time(), began=sent if since_sent else None)
        give_up = since + self.settle_retry
        if give_up > loop.time():
            self._logger.info(
                "%s at %s may or may not have landed (%s); running it again "
                "for up to %.1f s to learn its outcome",
                what,
                where,
                fault,
                give_up - loop.time(),
            )
        pause = _FIRST_PAUSE
        while (left := give_up - loop.time()) > 0:
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)
            try:
                answer = await attempt()
            except StoreUnavailableError as error:
                fault = error
                self._failed(loop.time())
            else:
                self._outage = None
                return answer
        raise StoreUnavailableError(
            f"{fault}; whether {what} was recorded is unknown (the store has not answered "
            f"for {loop.time() - since:.1f} s): {advice}"
        ) from fault

    def _failed(self, now: float, *, began: float | None = None) -> float:
        """Note a settle that failed to reach the store at ``now``; when the outage began.

        Failures more than :data:`_SAME_OUTAGE` seconds apart belong to separate outages
        (the store may have answered reads in between). ``began`` is when the failed
        attempt was sent, for a store whose silent calls fail only after its timeout.
        """
        outage = self._outage
        if outage is None or now - outage[1] > _SAME_OUTAGE:
            outage = (now if began is None else began, now)
        self._outage = (outage[0], now)
        return outage[0]

    def _cutoff(self) -> float:
        """Outcomes settled at or before this time on :attr:`clock` have expired."""
        return float(self.clock()) - self._keep

    def _retained(
        self, settled_at: float | str | bytes | None, *, now: float | None = None
    ) -> bool:
        """Whether an outcome settled at ``settled_at`` is still readable.

        ``None`` (not settled) is always readable. Storage drops expired outcomes only
        when it purges (or on its own clock); reads hide them on the store's clock, which
        can run ahead (a fake clock, a server whose clock lags). A time that cannot be read
        hides nothing. ``now`` is the clock reading the caller already took.
        """
        if settled_at is None:
            return True
        cutoff = self._cutoff() if now is None else now - self._keep
        try:
            return float(settled_at) > cutoff
        except ValueError:
            return True

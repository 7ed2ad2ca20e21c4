"""The interfaces a human-input store offers to :class:`HumanInputHandler`.

A store keeps the active requests and the settled outcomes that stay replayable. Its one
state transition is ``settle``, a check-and-set: whoever calls it first on a pending request
wins; everyone after loses and the recorded outcome stays as it is.

A durable store may also record the votes of quorum approvals (:class:`VotingStore`): each
vote is one atomic operation, like a settle, which settles the request when it decides.

A durable store may also say which requests changed since an earlier look
(:class:`ChangeTracking`): the SQLite, Redis and PostgreSQL stores keep a change log that
every create, settle, vote and new deadline writes to in its own transaction, so that a
waiter's backstop costs one cheap read while nothing moves, however many requests it waits on.

A store may also list its recent outcomes, newest first (``list_settled``, see
:class:`SettledHistory` and :class:`DurableSettledHistory`): the memory, SQLite and Redis
stores do; the handler reads an empty history from a store that does not.

Two kinds of store exist:

- :class:`PendingStore`, synchronous and local to one process (the memory store): the
  spec's ``resolve()`` / ``reject()`` return their ``bool`` at once.
- :class:`DurableStore`, asynchronous and shared by processes (SQLite, Redis): the
  check-and-set is one transaction in the store, so exactly one outcome wins across every
  process, and a change feed tells each process that a request it waits on has moved.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from enum import StrEnum, unique
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack, runtime_checkable

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._facets import (
    SETTLED_LIMIT,
    DurableSettledHistory,
    InsertsSettled,
    PlainSettle,
    SettledHistory,
    SpendLedger,
    VotingStore,
    check_settled_listing,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "SETTLED_LIMIT",
    "ChangeMark",
    "ChangeTracking",
    "ChangesSince",
    "DurableSettledHistory",
    "DurableStore",
    "InsertsSettled",
    "PendingChange",
    "PendingChangeKind",
    "PendingFilters",
    "PendingStore",
    "PlainSettle",
    "SettleOutcome",
    "SettledHistory",
    "SpendLedger",
    "VotingStore",
    "check_settled_listing",
]


class SettleOutcome(TypedDict, total=False):
    """The outcome keywords of every store's ``settle``; each may be left out."""

    result: str | None
    """The answer; ``None`` by default."""
    reason: str | None
    """Why the request was rejected; ``None`` by default."""
    withdrawn: bool
    """Whether the request was withdrawn rather than answered; ``False`` by default."""
    settled_by: str | None
    """Who settled it; ``None`` (the default) keeps what the record holds."""


class PendingFilters(TypedDict, total=False):
    """The filters of :meth:`DurableStore.list_pending`; a missing or ``None`` one filters
    nothing."""

    room_id: str | None
    actor_id: str | None
    channel_id: str | None


class PendingStore(Protocol):
    """Where a handler keeps its requests and their outcomes, in this process."""

    def add(self, request: PendingInput) -> None:
        """Record a new, pending request; it is answerable from now on."""

    def get(self, pending_id: str) -> PendingInput | None:
        """The active request with this id, settled or not, or ``None``."""

    def get_settled(self, pending_id: str) -> PendingInput | None:
        """The retained outcome of a request no longer active, or ``None``."""

    def settle(
        self, pending_id: str, status: PendingInputStatus, **outcome: Unpack[SettleOutcome]
    ) -> PendingInput | None:
        """Settle the request if it is still pending; return it when this call won.

        ``outcome`` holds the :class:`SettleOutcome` keywords (``result``, ``reason``,
        ``withdrawn``, ``settled_by``).

        Returns ``None`` when the id is not active or the request was already settled: the
        recorded outcome is then unchanged.
        """

    def retire(self, request: PendingInput) -> None:
        """Drop a request from the active set; its outcome stays in the retention."""

    def by_key(self, key: str) -> PendingInput | None:
        """The active or retained request created with idempotency ``key``, or ``None``."""

    def active(self) -> list[PendingInput]:
        """The active requests, oldest first."""


@unique
class PendingChangeKind(StrEnum):
    """What happened to a request."""

    CREATED = "created"
    SETTLED = "settled"
    VOTED = "voted"
    """A vote was recorded on a quorum approval still open (its votes, its approvers and,
    after an edit, its arguments changed)."""
    RESYNC = "resync"
    """Changes may have been missed (a reconnect): listeners re-read what they watch."""


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A hint that a request moved. Listeners re-read the record; hints may repeat."""

    kind: PendingChangeKind
    pending_id: str = ""
    """The request, or ``""`` for :attr:`PendingChangeKind.RESYNC`."""
    record: PendingInput | None = field(default=None, compare=False)
    """The settled record, when the store sent it along with a ``SETTLED`` hint (a read
    saved); ``None`` otherwise. Not part of equality: two hints about one change are equal."""


ChangeListener = Callable[[PendingChange], None]


@runtime_checkable
class DurableStore(Protocol):
    """A store shared by processes: every method is a round trip, every settle atomic.

    Records are :class:`PendingInput` objects rebuilt from storage on every read (a caller
    may keep them: the store never mutates one it handed out). ``deadline`` is on the
    store's :attr:`clock` (seconds since the epoch by default). Failures to reach the store
    raise :class:`~roomkit.core.exceptions.StoreUnavailableError`; a record that cannot be
    decoded raises :class:`~roomkit.core.exceptions.CorruptRecordError` where it is read by
    id, and is skipped (and logged) where it is listed.
    """

    clock: Callable[[], float]
    """The store's clock: deadlines and retention are measured on it."""
    backstop_interval: float
    """Seconds between a waiter's looks at what changed, in case a change hint was lost (a
    store without :class:`ChangeTracking` has the waiter re-read what it waits on)."""

    async def open(self) -> None:
        """Connect and create the schema; idempotent (every other method opens lazily).

        Raises:
            StoreUnavailableError: the store cannot be reached.
            StoreFormatError: the store holds another format version of its records.
        """

    async def close(self) -> None:
        """Stop the change feed and disconnect; idempotent."""

    async def insert(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]] = ()
    ) -> tuple[PendingInput, bool]:
        """Record a new pending request; ``(record, True)`` when it was created.

        When ``request.key`` matches a retained record (open or settled), nothing is
        written and ``(that record, False)`` comes back: the caller re-attaches to it.
        ``history`` (the request's ``created`` entry) starts its history in the same
        write when, and only when, the request is created.

        Raises:
            ValueError: the request is not pending.
            InvalidTextError: a text field holds what no store can hold.
            StoreError: a request with this ``pending_id`` is already stored.
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled (within retention), or ``None``.

        Raises:
            CorruptRecordError: the stored record cannot be read.
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """

    async def fetch_many(self, pending_ids: Collection[str]) -> list[PendingInput]:
        """The records among ``pending_ids`` that exist, in no particular order.

        Raises:
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """

    async def set_deadline(self, pending_id: str, deadline: float) -> float | None:
        """Set the deadline of a pending request unless it has an earlier one.

        Returns the deadline in force, or ``None`` when the request is not pending.

        Raises:
            ValueError: ``deadline`` is not a finite time.
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """

    async def settle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        *,
        token: str | None = None,
        history: Sequence[dict[str, Any]] = (),
        **outcome: Unpack[SettleOutcome],
    ) -> PendingInput | None:
        """The check-and-set: settle a pending request; return the record when this call won.

        ``outcome`` holds the :class:`SettleOutcome` keywords (``result``, ``reason``,
        ``withdrawn``, ``settled_by``).

        ``history`` holds the entries (see
        :func:`~roomkit.stores.new_entry`) to append to the request's
        history if this call wins: in the same transaction as the outcome, chained on the
        head with the same check-and-set as ``append_history``, so that nobody learns of the
        outcome before its entries are stored. A settle that loses appends nothing, and one
        run again with its token after a fault appends them once. When the deadline came
        first and the store records the timeout instead, a settle that carries ``history``
        appends :func:`~roomkit.stores.deadline_entry` in its place.

        The outcome is durable before this returns. ``TIMED_OUT`` wins only once the
        deadline has passed on :attr:`clock`; any other status loses to a passed deadline,
        and then the store records ``TIMED_OUT`` instead (so the answer and the timeout
        never both win, whichever process sees the deadline first). ``None`` means this
        call did not win: the id is unknown, already settled, or timed out.

        The deadline is judged by the one reading of :attr:`clock` this call takes, and a
        timeout is recorded only by a call whose reading is at or past it: an answer is
        accepted if and only if the store records it before it records the timeout. The
        reading comes before the acknowledgement by this call's own latency, so a winner
        may hear of it after the deadline by up to that much, and is never lost. SQLite
        reads the clock under the write lock and returns once the COMMIT is on disk (the
        rest of the batch and one fsync later); Redis reads it as the call is sent, and the
        script decides when it runs (after any queueing, and the retries of a dropped
        connection, which keep the reading), so the bound is the whole call.

        ``token`` names this settle (a new random one when ``None``) and is recorded with a
        winning outcome. A settle whose token is already recorded on the request won
        earlier and returns the record again: after a fault hid the outcome the store
        re-runs the settle with its token (for up to ``settle_retry`` seconds, part of the
        call), and a caller that retries a settle itself (a vote sent again after an error)
        passes the same token to learn whether it counted.
        :class:`~roomkit.core.exceptions.StoreUnavailableError` means the store stayed
        away long enough that the outcome is still unknown.

        Raises:
            ValueError: ``status`` is ``PENDING``, or ``token`` is empty.
            TypeError: ``token`` is not a str.
            InvalidTextError: the result, the reason or the name holds what no store
                can hold.
            StoreUnavailableError: the store stayed away long enough that the outcome
                is still unknown.
            StoreClosedError: the store was closed.
        """

    async def list_pending(self, **filters: Unpack[PendingFilters]) -> list[PendingInput]:
        """The requests still pending, oldest first, that match the :class:`PendingFilters`
        given (``room_id``, ``actor_id``, ``channel_id``); ``None`` filters nothing.

        Raises:
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """

    async def mark_announced(self, pending_id: str) -> None:
        """Record that the request was announced (its ON_USER_INPUT_REQUIRED callback ran).

        ``insert`` stores every new request as not announced yet. A process that stopped
        between the two leaves the announcement owed: whoever re-attaches to the request
        by key announces it. An unknown id is ignored.

        Raises:
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """

    async def was_announced(self, pending_id: str) -> bool:
        """False while a stored request's announcement is owed; True once it was recorded,
        and for an id not stored (nothing to announce).

        Raises:
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener`` for changes made by any process; returns the unsubscribe.

        The feed runs while someone listens. It covers this store's own writes too (hints
        may repeat) and sends :attr:`PendingChangeKind.RESYNC` after a reconnect.
        """

    async def purge_expired(self) -> int:
        """Drop settled records older than the retention; return how many went.

        Raises:
            StoreUnavailableError: the store cannot be reached.
            StoreClosedError: the store was closed.
        """


ChangeMark = tuple[int, ...]
"""Where a store's change log stood at a look: the caller hands it back to the next look
and reads nothing into it."""


@dataclass(frozen=True, slots=True)
class ChangesSince:
    """What :meth:`ChangeTracking.changes_since` found."""

    mark: ChangeMark
    """Where the log stands now: the next look asks from here."""
    pending_ids: frozenset[str] | None
    """The requests created, settled, voted on or given an earlier deadline since the mark
    asked about (hints may repeat: a request may be named again). ``None`` when the store
    cannot tell: no mark was given, the log went back (the data was replaced or restored), or
    more changed than one look lists; the caller then re-reads whatever it watches."""


@runtime_checkable
class ChangeTracking(Protocol):
    """A :class:`DurableStore` that says which requests changed since an earlier look (the
    SQLite, Redis and PostgreSQL stores do). A waiter's backstop asks it instead of reading
    every request it waits on, so that waits that nothing answers cost nothing that grows
    with their number; a change whose hint was lost is still named here."""

    async def changes_since(self, mark: ChangeMark | None) -> ChangesSince:
        """The requests that changed since ``mark`` (from an earlier look; ``None`` to start
        one), in one read. A change committed after the look is named by the next one.

        Raises:
            TypeError: ``mark`` is not a mark this store gave.
            StoreUnavailableError: the store cannot be reached.
        """
        ...

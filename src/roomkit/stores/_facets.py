"""What a store may offer besides the contract of :mod:`roomkit.stores.base`.

Each is a protocol the handler checks for: a spend-once ledger beside the requests
(:class:`SpendLedger`), a listing of recent outcomes (:class:`SettledHistory`,
:class:`DurableSettledHistory`), the votes of quorum approvals (:class:`VotingStore`) and a
settle that tells whether the answer needs checking (:class:`PlainSettle`). They are
imported from :mod:`roomkit.stores.base`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from roomkit.models.pending_input import PendingInput

if TYPE_CHECKING:
    from roomkit.stores._quorum import Ballot, Judgement

__all__ = [
    "SETTLED_LIMIT",
    "DurableSettledHistory",
    "InsertsSettled",
    "PlainSettle",
    "SettledHistory",
    "SpendLedger",
    "VotingStore",
    "check_settled_listing",
]

SETTLED_LIMIT = 200
"""The most outcomes one ``list_settled`` call returns (the Redis store indexes as many)."""


@runtime_checkable
class SpendLedger(Protocol):
    """Names spent once, shared by every process on the store: single-use links, revocations.

    An entry is a string of 1 to 512 characters; ``until`` is when it may be forgotten, on
    the store's clock (``None`` keeps it for good). Entries past their ``until`` read as
    absent and are pruned. The SQLite and Redis stores keep their ledger with their
    requests; a handler on the memory store keeps one in memory.
    """

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """The check-and-set: record ``entry`` as spent; ``True`` for the first caller only.

        ``False`` means an unexpired entry of that name is already recorded (by any
        process); nothing changes then.

        Raises:
            TypeError: ``entry`` is not a str, or ``until`` is not a number or ``None``.
            ValueError: ``entry`` is empty or too long, or ``until`` is not finite.
            InvalidTextError: ``entry`` holds what no store can hold.
            StoreUnavailableError: the store cannot be reached.
        """
        ...

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry`` (a spend whose use failed): it may be spent again.

        Raises:
            TypeError: ``entry`` is not a str.
            ValueError: ``entry`` is empty or too long.
            StoreUnavailableError: the store cannot be reached.
        """
        ...

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now, replacing an earlier record; returns the time.

        Raises:
            TypeError: ``entry`` is not a str, or ``until`` is not a number or ``None``.
            ValueError: ``entry`` is empty or too long, or ``until`` is not finite.
            InvalidTextError: ``entry`` holds what no store can hold.
            StoreUnavailableError: the store cannot be reached.
        """
        ...

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, each with the time it was spent.

        Raises:
            TypeError: ``entries`` is one str, not a collection of them.
            StoreUnavailableError: the store cannot be reached.
        """
        ...


@runtime_checkable
class SettledHistory(Protocol):
    """A :class:`~.base.PendingStore` that lists its retained outcomes."""

    def list_settled(
        self, *, actor_ids: Collection[str | None] | None = None, limit: int = 50
    ) -> list[PendingInput]:
        """The most recently settled requests still retained, newest first.

        Args:
            actor_ids: only the requests naming one of these actors (``None`` in it stands
                for requests that name no actor); every request when ``None``.
            limit: at most this many, from 1 to :data:`SETTLED_LIMIT`.


        Raises:
            TypeError: ``limit`` is not an int, or ``actor_ids`` is a string or holds a
                non-string.
            ValueError: ``limit`` is below 1 or above :data:`SETTLED_LIMIT`.
        """
        ...


@runtime_checkable
class DurableSettledHistory(Protocol):
    """A :class:`~.base.DurableStore` that lists its outcomes still within the retention."""

    async def list_settled(
        self, *, actor_ids: Collection[str | None] | None = None, limit: int = 50
    ) -> list[PendingInput]:
        """The most recently settled requests within the retention, newest first.

        Args:
            actor_ids: as :meth:`SettledHistory.list_settled`.
            limit: at most this many, from 1 to :data:`SETTLED_LIMIT`.

        Raises:
            TypeError: ``limit`` is not an int, or ``actor_ids`` is a string or holds a
                non-string.
            ValueError: ``limit`` is below 1 or above :data:`SETTLED_LIMIT`.
            StoreUnavailableError: the store cannot be reached.
        """
        ...


@runtime_checkable
class VotingStore(Protocol):
    """A :class:`~.base.DurableStore` that records the votes of quorum approvals (the SQLite,
    Redis and PostgreSQL stores do)."""

    async def vote(self, pending_id: str, ballot: Ballot) -> Judgement:
        """Record ``ballot`` on the quorum approval, in one atomic operation of the store.

        The operation checks that the request is pending and its deadline not passed on
        :attr:`~.base.DurableStore.clock`, and that the voter is listed and has not voted on the
        current arguments (:func:`~roomkit.stores.judge`); records the
        vote and its ``voted`` history entry; and, when the vote reaches the quorum, vetoes
        it or puts it out of reach, settles the request with its ``settled`` entry, all or
        nothing. A vote that meets a passed deadline records the timeout and is refused.
        The same ballot (its token) run again after a fault finds itself counted.

        Raises:
            StoreUnavailableError: the store stayed away long enough that the vote's
                outcome is still unknown.
        """
        ...


@runtime_checkable
class PlainSettle(Protocol):
    """A :class:`~.base.DurableStore` that answers a request in one check-and-set which also
    tells whether the answer needs checking (the PostgreSQL store does): a handler that
    does not hold the request then settles without reading it first."""

    async def settle_plain(
        self,
        pending_id: str,
        result: str,
        *,
        settled_by: str | None = None,
        history: Sequence[dict[str, Any]] = (),
    ) -> tuple[PendingInput | None, PendingInput | None]:
        """Resolve the request with ``result`` as :meth:`~.base.DurableStore.settle` does, unless
        its answer needs a check against it (it has an answer schema, or is an approval):
        then nothing is written, and the caller checks ``result`` and settles.

        Returns the record when this call won (else ``None``), and the request as the call
        left it (``None`` when it is not stored): a pending one needs its answer checked.

        Raises:
            InvalidTextError: ``result`` or ``settled_by`` holds what no store can hold.
            StoreUnavailableError: the store stayed away long enough that the outcome
                is still unknown.
        """
        ...


@runtime_checkable
class InsertsSettled(Protocol):
    """A :class:`~.base.DurableStore` that stores a request settled as it is made (a call a
    policy decides, or a standing grant covers, nobody asked) in one write: its record, its
    outcome and its whole history land together, so that a process stopped there leaves
    either nothing or the settled request, never an open one that nobody is to answer (the
    SQLite, Redis and PostgreSQL stores do, in one transaction or one script)."""

    async def insert_settled(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]]
    ) -> tuple[PendingInput, bool]:
        """Record ``request``, settled already (``RESOLVED`` or ``REJECTED``, its
        ``result`` or ``reject_reason`` and its ``settled_by`` as given), with ``history``,
        its whole history (``created`` to ``settled``), as
        :meth:`~.base.DurableStore.insert` records a pending one: ``(record, True)`` when it
        was created; when ``request.key`` names a retained record, ``(that record, False)``
        and nothing is written. Listeners hear of its creation, then of its settle; it owes
        no announcement.

        Raises:
            ValueError: ``request`` is neither resolved nor rejected.
            InvalidTextError, StoreError, StoreUnavailableError, StoreClosedError: as
                :meth:`~.base.DurableStore.insert`.
        """
        ...


def check_settled_listing(
    actor_ids: Collection[str | None] | None, limit: int
) -> tuple[str | None, ...] | None:
    """The arguments of ``list_settled`` checked; ``actor_ids`` without repeats, in order.

    Raises:
        TypeError: ``limit`` is not an int, ``actor_ids`` is a string or holds a non-string.
        ValueError: ``limit`` is below 1 or above :data:`SETTLED_LIMIT`.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, got {type(limit).__name__}")
    if not 1 <= limit <= SETTLED_LIMIT:
        raise ValueError(f"limit must be from 1 to {SETTLED_LIMIT}, got {limit}")
    if actor_ids is None:
        return None
    if isinstance(actor_ids, str | bytes):
        raise TypeError("actor_ids is a collection of actor ids: pass [actor_id], not a string")
    for actor_id in actor_ids:
        if actor_id is not None and not isinstance(actor_id, str):
            raise TypeError(f"actor_ids holds str or None, not {type(actor_id).__name__}")
    return tuple(dict.fromkeys(actor_ids))

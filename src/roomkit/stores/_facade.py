"""The façade methods every durable store passes straight to its parts: reads, ledger, history.

A durable store (SQLite, Redis, PostgreSQL) is a façade over parts that share its
connection. Its reads of records (``_reads``), its spend-once ledger (``_spending``) and its
approvals' data (``_approvals``: approvers and history chains, an
:class:`~roomkit.stores._approvals.ApprovalsPart`) have the same methods in every back end,
so the store's methods that only hand a call to them are written once, here, with their
contract. What differs between the back ends (how a check-and-set is made atomic) is said in
each part's module.

A public method whose work differs by back end but whose contract does not
(:meth:`PartsFacade.insert_granted`, :meth:`PartsFacade.insert_settled`) is written here
too, with its contract, and hands the work to a private method each store writes
(``_insert_with_grant``, ``_insert_settled``). :class:`GrantingFacade` adds the settle that
records an approval's grant in its own transaction (SQLite, PostgreSQL) or script (Redis),
handed to the store's ``_settle_checked`` with ``Outcome.grant``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol, Unpack

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._approvals import ApprovalsPart
from roomkit.stores._checks import Outcome, check_insertable
from roomkit.stores._durable_base import DurableBase
from roomkit.stores._facets import check_settled_listing
from roomkit.stores._history import entry_text
from roomkit.stores._trail import StoreTrail
from roomkit.stores.base import SettleOutcome
from roomkit.stores.grants import Grant, GrantedHistory, GrantedInsert
from roomkit.stores.outbox import OutboxItem

__all__ = ["GrantingFacade", "PartsFacade"]


class _Reads(Protocol):
    async def fetch(self, pending_id: str) -> PendingInput | None: ...
    async def fetch_many(self, pending_ids: Sequence[str]) -> list[PendingInput]: ...
    async def pending_records(self, filters: Mapping[str, str | None]) -> list[PendingInput]: ...
    async def was_announced(self, pending_id: str) -> bool: ...
    async def list_settled(
        self, wanted: tuple[str | None, ...] | None, limit: int
    ) -> list[PendingInput]: ...


class _Spending(Protocol):
    async def spend_once(self, entry: str, *, until: float | None) -> bool: ...
    async def refund_spent(self, entry: str) -> None: ...
    async def record_spent(self, entry: str, *, until: float | None) -> float: ...
    async def read_spent(self, entries: Collection[str]) -> dict[str, float]: ...


class PartsFacade(DurableBase):
    """A durable store's reads, ledger and history methods, handed to its parts."""

    _reads: _Reads
    _spending: _Spending
    _approvals: ApprovalsPart
    trail: StoreTrail

    async def _parts_ready(self) -> None:
        """Connect before a call reaches the reads' or the approvals' part (a store whose
        parts do not connect by themselves overrides it)."""

    # -- reads ---------------------------------------------------------------------------------

    async def fetch_many(self, pending_ids: Collection[str]) -> list[PendingInput]:
        """The records among ``pending_ids`` that exist, in no particular order.

        A record that cannot be decoded is skipped and logged.

        Raises:
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        await self._parts_ready()
        return await self._reads.fetch_many(list(pending_ids))

    async def _pending_records(self, filters: Mapping[str, str | None]) -> list[PendingInput]:
        await self._parts_ready()
        return await self._reads.pending_records(filters)

    async def was_announced(self, pending_id: str) -> bool:
        """False while the stored request's announcement is owed, else True.

        Raises:
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        await self._parts_ready()
        return await self._reads.was_announced(pending_id)

    async def list_settled(
        self, *, actor_ids: Collection[str | None] | None = None, limit: int = 50
    ) -> list[PendingInput]:
        """The most recently settled requests within the retention, newest first.

        Arguments as :meth:`~roomkit.stores.base.DurableSettledHistory.list_settled`.
        Requests settled in the same instant on :attr:`clock` come in no particular order;
        a record that cannot be decoded is skipped and logged.

        Raises:
            TypeError: ``limit`` is not an int, or ``actor_ids`` is a string or holds a
                non-string.
            ValueError: ``limit`` is below 1 or above the most a listing takes.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        wanted = check_settled_listing(actor_ids, limit)
        await self._parts_ready()
        return await self._reads.list_settled(wanted, limit)

    # -- grants: a covered request and its use in one write -----------------------------------

    async def insert_granted(
        self, request: PendingInput, grant_id: str, *, history: GrantedHistory
    ) -> GrantedInsert | None:
        """:meth:`insert` of a request the grant ``grant_id`` (of :attr:`grants`) covers,
        its use counted in the same write (a transaction; on Redis, a script; see
        :class:`~roomkit.stores.grants.InsertsGranted`): a request the key names is returned
        untouched, with no use spent; ``None`` when the grant covers nothing now. A
        ``request`` settled already (the approval the grant gives) is stored settled, with
        all of its history, in the same write.

        Raises:
            ValueError, TypeError, InvalidTextError, StoreError: as :meth:`insert`; the
                use is not counted.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        return await self._insert_with_grant(request, grant_id, history)

    @abstractmethod
    async def _insert_with_grant(
        self, request: PendingInput, grant_id: str, history: GrantedHistory
    ) -> GrantedInsert | None: ...

    # -- a request settled as it is made, in one write -----------------------------------------

    async def insert_settled(
        self, request: PendingInput, *, history: Sequence[dict[str, Any]]
    ) -> tuple[PendingInput, bool]:
        """:meth:`insert` of a request settled as it is made (resolved or rejected), with
        ``history``, all of its history, in one write (a transaction; on Redis, a script;
        see :class:`~roomkit.stores.base.InsertsSettled`): it is kept, listed, expired and
        replayed by its key as a request settled after its insert is.

        Raises:
            ValueError: ``request`` is neither resolved nor rejected.
            TypeError, InvalidTextError, StoreError: as :meth:`insert`.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed (:meth:`open` opens it again).
        """
        check_insertable(request, settled=True)
        return await self._insert_settled(request, history)

    @abstractmethod
    async def _insert_settled(
        self, request: PendingInput, history: Sequence[dict[str, Any]]
    ) -> tuple[PendingInput, bool]: ...

    # -- the spend-once ledger -----------------------------------------------------------------

    async def spend_once(self, entry: str, *, until: float | None) -> bool:
        """Record ``entry`` as spent until ``until`` (on :attr:`clock`; ``None`` keeps it).

        The check-and-set of the ledger: ``True`` for the first caller only, among every
        process sharing the store, while the entry has not expired.

        Raises:
            TypeError, ValueError: ``entry`` or ``until`` is not one a ledger takes.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        return await self._spending.spend_once(entry, until=until)

    async def refund_spent(self, entry: str) -> None:
        """Forget ``entry``, so that it may be spent again.

        Raises:
            TypeError, ValueError: ``entry`` is not one a ledger takes.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        await self._spending.refund_spent(entry)

    async def record_spent(self, entry: str, *, until: float | None) -> float:
        """Record ``entry`` as spent now, replacing an earlier record; returns the time.

        Raises:
            TypeError, ValueError: ``entry`` or ``until`` is not one a ledger takes.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        return await self._spending.record_spent(entry, until=until)

    async def read_spent(self, entries: Collection[str]) -> dict[str, float]:
        """The unexpired entries among ``entries``, each with the time it was spent.

        Raises:
            TypeError, ValueError: one of ``entries`` is not one a ledger takes.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        return await self._spending.read_spent(entries)

    # -- approvals: approvers and history -------------------------------------------------------

    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any] | None = None
    ) -> PendingInput | None:
        """Add ``actors`` to the pending request's approvers; the record, or ``None`` when
        the request is not pending.

        ``entry`` (checked by :func:`~roomkit.stores._history.check_entry`), when given, is
        appended to the request's history in the same write: no decision lands between
        the two, and no process dies between them.

        Raises:
            TypeError: ``entry`` is not JSON-serialisable; nothing was written.
            CorruptRecordError: the stored record is not one this library wrote.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        if entry is not None:
            entry_text(entry)  # not JSON-serialisable: the TypeError comes before the write
        await self._parts_ready()
        return await self._approvals.add_approvers(pending_id, actors, entry)

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` to the request's history, chained to its head; its ``seq``.

        The append is a check-and-set on the head of the chain: another process's append in
        between is found, and this entry is linked to the new head (each back end's
        ``_approvals`` module says how).

        Raises:
            TypeError: ``entry`` is not JSON-serialisable; nothing was written.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        entry_text(entry)  # not JSON-serialisable: the TypeError comes before the write
        await self._parts_ready()
        return await self._approvals.append_history(pending_id, entry)

    async def append_history_at(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` as entry ``seq`` of the pending request's history; ``False``,
        having written nothing, when the request is not pending or its history is no longer
        ``seq`` entries long.

        One check-and-set on the request's status and the chain's head: two processes that
        read the same history and decide the same entry from it (a routing assignment)
        write it once, and none lands after the request's settle.

        Raises:
            TypeError: ``entry`` is not JSON-serialisable; nothing was written.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        return await self.append_history_noticed(pending_id, entry, seq, ())

    async def append_history_noticed(
        self, pending_id: str, entry: dict[str, Any], seq: int, notices: Sequence[OutboxItem]
    ) -> bool:
        """:meth:`append_history_at`, adding ``notices`` to :attr:`outbox` in the same
        write (a transaction; on Redis, a script); those whose ids it holds already are left
        as they are. ``False``, having written neither, when the append is refused: a
        reassignment and the notice owed to its new person land together, whenever the
        process dies.

        Raises:
            TypeError: ``entry`` is not JSON-serialisable, or a notice's body is not
                JSON-ready; nothing was written.
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        entry_text(entry)  # not JSON-serialisable: the TypeError comes before the write
        for notice in notices:
            notice.encoded_body()  # not JSON-ready: the TypeError comes before the write
        await self._parts_ready()
        return await self._approvals.append_history_at(pending_id, entry, seq, notices)

    async def append_history_after(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` as entry ``seq`` of the request's history, open or settled;
        ``False``, having written nothing, when its history is no longer ``seq`` entries
        long.

        One check-and-set on the chain's head: two processes that read the same history and
        owe the same entry from it after the settle (a ladder's default) write it once, and
        one whose write the store did not see through cannot add a second later.

        Raises:
            TypeError, StoreUnavailableError, StoreClosedError: as :meth:`append_history`.
        """
        entry_text(entry)  # not JSON-serialisable: the TypeError comes before the write
        await self._parts_ready()
        return await self._approvals.append_history_after(pending_id, entry, seq)

    async def history_texts(self) -> dict[str, list[str]]:
        """Every request's stored history entries, oldest first, by request id.

        Raises:
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        return (await self.trail.read()).texts()

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first.

        Raises:
            StoreUnavailableError: the database cannot be reached.
            StoreClosedError: the store was closed.
        """
        await self._parts_ready()
        return await self._approvals.read_history(pending_id)


class GrantingFacade(PartsFacade):
    """A durable store that records the grant an approval makes in that approval's settle
    (:class:`~roomkit.stores.grants.SettlesGranting`): its check-and-set honours
    ``Outcome.grant``."""

    async def settle_granting(
        self,
        grant: Grant,
        pending_id: str,
        status: PendingInputStatus,
        *,
        token: str | None = None,
        history: Sequence[dict[str, Any]] = (),
        **outcome: Unpack[SettleOutcome],
    ) -> PendingInput | None:
        """:meth:`settle`, recording ``grant`` (of :attr:`grants`) in the same transaction
        when this call wins; a grant with its id recorded already is left as it is.

        Raises:
            ValueError, TypeError, InvalidTextError, CorruptRecordError,
                StoreUnavailableError, StoreClosedError: as :meth:`settle`.
        """
        given = Outcome.given(outcome)._replace(grant=grant)
        return await self._settle_given(pending_id, status, token, given, history)

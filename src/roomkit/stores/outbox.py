"""The notification outbox: what is owed to people, recorded before it is sent.

Every store keeps one beside its requests, in a table or keys of its own (the requests'
rows are untouched). An item is one thing to do for one request — a ladder step, or one
delivery through one surface — named by a stable id (a webhook's ``webhook-id``). It is
added once (adding an id already there changes nothing), then each time it is due:

1. :meth:`Outbox.claim` takes it for one process by pushing its due time a lease ahead, in
   one check-and-set: two processes never both hold it;
2. the holder does it, renewing the lease while it works (:meth:`Outbox.renew`);
3. :meth:`Outbox.complete` marks it done, or :meth:`Outbox.postpone` puts it back for a
   later attempt.

A process killed between 1 and 3 leaves the item due again when its lease lapses, so it
is done at least once; an item is never done again once complete. Times are on the
store's clock.

Each item is in a *lane*: a delivery in the one of the surface it goes through, a step in
the steps' lane (:data:`STEPS`). A claim may name lanes and how many items to take in each,
so that a notifier takes work for each surface on its own: a lane it cannot serve now
(every slot busy with a receiver that hangs) never stands in front of another's items.

A request's steps are named ``<pending_id>.<job>`` (:func:`step_id`); its ``settle`` step,
the one that tells how it ended, is its *ending*. A request with items but no ending is
still owed one (:meth:`Outbox.unended`), however long ago it settled; once its ending is
older than the retention and every item of it is done, :meth:`Outbox.purge` drops them all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from roomkit.stores.memory import MemoryOutbox


__all__ = [
    "COLUMNS",
    "ENDING",
    "IS_ENDING",
    "KEEP_DONE",
    "STEPS",
    "Claim",
    "ClaimingOutbox",
    "EndingStatements",
    "KeepsOutbox",
    "MemoryOutbox",
    "Outbox",
    "OutboxItem",
    "item_from_row",
    "lane_of",
    "now_of",
    "outbox_for",
    "step_id",
]

ENDING = "settle"
"""The job of a request's last step: telling how it ended."""

KEEP_DONE = 7 * 86_400.0
"""Seconds a request's items are kept after its ending, by default (stores take
``outbox_retention_seconds``)."""


STEPS = ""
"""The lane of steps (ladder steps, announcements, endings): items that say who is told."""


def lane_of(body: Mapping[str, Any]) -> str:
    """The lane of an item with ``body``: the surface a delivery goes through, else
    :data:`STEPS`."""
    surface = body.get("surface")
    return surface if isinstance(surface, str) else STEPS


def step_id(pending_id: str, job: str) -> str:
    """The id of the step ``job`` (``announce``, ``remind0``, ``settle``, ...) of a request."""
    return f"{pending_id}.{job}"


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """One thing owed about one request."""

    item_id: str
    """Stable: the same on every attempt (a webhook's ``webhook-id``)."""
    pending_id: str
    due: float
    """When it may next be attempted, on the store's clock."""
    body: dict[str, Any] = field(default_factory=dict)
    """What to do, as a JSON object."""
    attempts: int = 0
    """Attempts that failed and were postponed."""
    created: float = 0.0
    """When it was added: retries give up a fixed time after it."""
    done: bool = False
    receipt: dict[str, Any] | None = None
    """What the surface returned when it was delivered; while not done, what went through
    of an attempt that failed in part (see :meth:`Outbox.postpone`)."""

    @property
    def lane(self) -> str:
        """The surface a delivery goes through, or :data:`STEPS` (see :func:`lane_of`)."""
        return lane_of(self.body)

    def encoded_body(self) -> str:
        return json.dumps(self.body, separators=(",", ":"), sort_keys=True)


COLUMNS = "item_id, pending_id, due, body, attempts, created, done, receipt"
"""The columns of an outbox table (SQLite, PostgreSQL), in :func:`item_from_row` order."""


IS_ENDING = f"item_id = pending_id || '.{ENDING}'"
"""An SQL outbox row that is a request's ending, as the partial index on endings has it (a
query uses that index only when it says it the same way)."""


@dataclass(frozen=True, slots=True)
class EndingStatements:
    """The SQL (SQLite, PostgreSQL) that finds the requests owed an ending and purges."""

    unended: str
    """The requests with rows but no ending row."""
    purge: str
    """Delete the rows of the requests whose ending was added before the one parameter and
    whose rows are all done."""

    @classmethod
    def on(cls, table: str, *, marker: str, done: str) -> EndingStatements:
        """The statements on ``table``, with ``marker`` for the parameter and ``done`` for a
        done row (``done = 1`` in SQLite, ``done`` in PostgreSQL)."""
        return cls(
            unended=(
                f"SELECT DISTINCT pending_id FROM {table} AS o WHERE NOT EXISTS ("
                f"SELECT 1 FROM {table} WHERE item_id = o.pending_id || '.{ENDING}')"
            ),
            purge=(
                f"DELETE FROM {table} WHERE pending_id IN (SELECT pending_id FROM {table} AS e "
                f"WHERE {IS_ENDING} AND {done} AND created < {marker} AND NOT EXISTS ("
                f"SELECT 1 FROM {table} WHERE pending_id = e.pending_id AND NOT ({done})))"
            ),
        )


def item_from_row(row: Sequence[Any]) -> OutboxItem:
    """An item from a row of :data:`COLUMNS`."""
    return OutboxItem(
        item_id=row[0],
        pending_id=row[1],
        due=float(row[2]),
        body=json.loads(row[3]),
        attempts=int(row[4]),
        created=float(row[5]),
        done=bool(row[6]),
        receipt=None if row[7] is None else json.loads(row[7]),
    )


@runtime_checkable
class Outbox(Protocol):
    """A store's outbox, shared by every process on the store."""

    async def add(self, items: Sequence[OutboxItem]) -> int:
        """Record the items not recorded yet; returns how many were new.

        Raises:
            TypeError: an item's body is not JSON-ready.
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def claim(
        self,
        owner: str,
        now: float,
        lease: float,
        limit: int,
        *,
        lanes: Mapping[str, int] | None = None,
    ) -> list[OutboxItem]:
        """Take items due at ``now`` for ``owner`` until ``now + lease``, earliest due first:
        up to ``limit`` of them; with ``lanes``, up to ``lanes[name]`` in each lane named and
        up to ``limit`` in the lanes not named.

        Raises:
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def renew(
        self, item_id: str, owner: str, until: float, *, receipt: dict[str, Any] | None = None
    ) -> bool:
        """Extend ``owner``'s lease on an item; ``False`` when it holds it no more.
        ``receipt`` (when given) is kept with it, as a postponement's is: written before a
        send, where the send goes, so that a process killed during the send leaves it said.

        Raises:
            TypeError: ``receipt`` is not JSON-ready.
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def complete(self, item_id: str, receipt: dict[str, Any] | None) -> None:
        """Mark an item done (with what the surface returned); it is never claimed again.

        Raises:
            TypeError: ``receipt`` is not JSON-ready.
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def postpone(
        self, item_id: str, due: float, receipt: dict[str, Any] | None = None
    ) -> None:
        """Put an item back, due at ``due``, one attempt more; ``receipt`` (when given)
        is kept with it, what went through of a delivery that failed in part, and comes
        back with its next claim.

        Raises:
            TypeError: ``receipt`` is not JSON-ready.
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def items_for(self, pending_id: str) -> list[OutboxItem]:
        """Every item of a request, oldest first.

        Raises:
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def next_due(self, lanes: Collection[str] | None = None) -> float | None:
        """The earliest due time among items not done (in ``lanes`` when given), or
        ``None``.

        Raises:
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def unended(self) -> list[str]:
        """The requests with items but no ending step yet, in no particular order.

        Raises:
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...

    async def purge(self, before: float) -> int:
        """Drop every item of the requests whose ending was added before ``before`` and
        whose items are all done; returns how many items went.

        Raises:
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        ...


class Claim(NamedTuple):
    """One claim on an outbox, as :meth:`Outbox.claim` takes it."""

    owner: str
    """Who takes the items."""
    now: float
    """The time the items must be due by."""
    until: float
    """The end of the lease: the items' new due time."""
    limit: int
    """The most items taken in the lanes not named in ``lanes``."""
    lanes: Mapping[str, int] | None
    """The most items taken in each lane named; ``None``: every lane shares ``limit``."""


class ClaimingOutbox:
    """An outbox's :meth:`claim`, the same in every back end: the back end takes the items
    (``_claim_due``)."""

    async def claim(
        self,
        owner: str,
        now: float,
        lease: float,
        limit: int,
        *,
        lanes: Mapping[str, int] | None = None,
    ) -> list[OutboxItem]:
        """Take the items due, as :meth:`Outbox.claim` does: ``until`` is ``now + lease``.

        Raises:
            StoreUnavailableError: the store's database cannot be reached (a durable store).
            StoreClosedError: the store was closed (a durable store).
        """
        return await self._claim_due(Claim(owner, now, now + lease, limit, lanes))

    async def _claim_due(self, claim: Claim) -> list[OutboxItem]:
        raise NotImplementedError


@runtime_checkable
class KeepsOutbox(Protocol):
    """A store that keeps the notification outbox beside its requests (the durable stores)."""

    outbox: Outbox
    """The store's outbox: one per store, shared by every handler and notifier on it."""


def now_of(handler: Any) -> float:
    """The time on the clock ``handler``'s outbox and deadlines use: the store's on a
    durable store, the running event loop's on the memory store."""
    if handler.durable:
        return float(handler.store.clock())
    return asyncio.get_running_loop().time()


def outbox_for(handler: Any) -> Outbox:
    """The outbox beside the requests of ``handler`` (a ``HumanInputHandler``): its
    :attr:`~roomkit.tools.human_input.HumanInputHandler.outbox`.

    SQLite, Redis and PostgreSQL stores keep it in their database, shared by every process
    (``store.outbox``); on any other store (the memory store) the handler keeps one in this
    process's memory.
    """
    outbox: Outbox = handler.outbox
    return outbox


def __getattr__(name: str) -> Any:
    # The memory outbox lives with the memory store, whose module builds on this one.
    if name == "MemoryOutbox":
        from roomkit.stores.memory import MemoryOutbox

        return MemoryOutbox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

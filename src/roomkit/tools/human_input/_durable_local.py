"""The requests a durable handler created here and no wait has collected yet.

A wait on a request this process created needs no read before it registers: the record the
insert returned is the stored one, a settle made here is handed over as it commits, and the
sweeper's next look at the store's change counter names any change made elsewhere, as long
as no look began between the insert and the wait (one that did may have passed the change
by, so the wait reads the request as before). :class:`LocalRequests` keeps, per request, the
look count at its insert and the outcome of a settle made here before its wait came.

A request whose channel (or handler) closes before a wait collects it leaves
:attr:`LocalRequests.records` but is remembered a while longer, with its withdrawal if that
won: a wait begun afterwards knows its channel without a read, so it ends as a wait on a
closed channel does even while the store is away, rather than riding the outage out to
learn the channel from the store.

A request no wait ever collects (a detached one, or an approval whose answer is carried
elsewhere, as a workflow's or a durable adapter's) is not held for the process's life: when
the requests held have doubled since the last look (:meth:`LocalRequests.review_due`), those
no wait is on are looked up in the store, and the ones that settled or left it are
forgotten (their waits, if any come, read them).
"""

from __future__ import annotations

from roomkit.models.pending_input import PendingInput, copy_request

__all__ = ["LocalRequests"]

REVIEWED_AT = 128
"""Requests held here at which those no wait is on are first looked up in the store; the
next look comes when the requests held have doubled again."""
CLOSED_KEPT = 16_384
"""How many requests closed here before a wait collected them are remembered (the latest):
a wait on an older one reads its channel from the store."""


class LocalRequests:
    """Requests created here, by id, with what a first wait on each knows without a read."""

    __slots__ = ("_closed", "_early", "_fresh", "_review_at", "records")

    def __init__(self) -> None:
        self.records: dict[str, PendingInput] = {}
        """Requests created here and not yet collected by a wait (for close and ``pending``)."""
        self._fresh: dict[str, int] = {}
        self._early: dict[str, PendingInput] = {}
        self._closed: dict[str, PendingInput] = {}
        self._review_at = REVIEWED_AT

    def hold(self, record: PendingInput, looks: int | None) -> None:
        """Keep ``record``, as its insert returned it; ``looks``: the looks begun before the
        insert (``None`` when a look was running, or none ran yet: its wait reads it)."""
        pending_id = record.pending_id
        self.records[pending_id] = record
        if looks is None:
            self._fresh.pop(pending_id, None)
        else:
            self._fresh[pending_id] = looks

    def review_due(self) -> bool:
        """Whether the requests held have doubled since the last look (or reached
        :data:`REVIEWED_AT`): those no wait is on are to be looked up in the store."""
        return len(self.records) >= self._review_at

    def reviewed(self) -> None:
        """A look began: the next is due once the requests held now have doubled."""
        self._review_at = max(REVIEWED_AT, 2 * len(self.records))

    def keep_settled(self, record: PendingInput) -> None:
        """A settle of a request created here, before any wait on it: kept for its wait."""
        if record.pending_id in self.records:
            self._early[record.pending_id] = record
        elif record.pending_id in self._closed:
            self._closed[record.pending_id] = record

    def close(self, pending_id: str) -> None:
        """The request's channel (or the handler) closed before a wait collected it: it
        leaves :attr:`records`, and is remembered for :meth:`closed`."""
        record = self.records.get(pending_id)
        self.drop(pending_id)
        if record is not None:
            closed = self._closed
            closed[pending_id] = record
            if len(closed) > CLOSED_KEPT:
                del closed[next(iter(closed))]

    def closed(self, pending_id: str) -> PendingInput | None:
        """The request as it was when its channel closed here (its withdrawal, if that won
        since), while it is remembered; else ``None``."""
        return self._closed.get(pending_id)

    def changed(self, pending_id: str) -> None:
        """The request moved elsewhere before its wait came: the wait reads it."""
        self._fresh.pop(pending_id, None)

    def resync(self) -> None:
        """Changes may have been missed: every wait to come reads its request."""
        self._fresh.clear()

    def take(self, pending_id: str, looks: int) -> tuple[PendingInput | None, bool]:
        """What a first wait on ``pending_id`` knows, ``looks`` looks begun: its outcome if
        settled here, a copy of it and ``True`` when no look began since its insert, else
        ``(None, False)``: the wait reads it and reads it again once registered."""
        early = self._early.pop(pending_id, None)
        fresh = self._fresh.pop(pending_id, None) == looks
        if early is not None:
            return early, False
        record = self.records.get(pending_id) if fresh else None
        if record is None:
            return None, False
        # The wait's own copy: its watch keeps the deadline in it, apart from this one.
        return copy_request(record), True

    def drop(self, pending_id: str) -> None:
        """Forget the request (collected by its wait, or given up)."""
        self.records.pop(pending_id, None)
        self._fresh.pop(pending_id, None)
        self._early.pop(pending_id, None)
        self._closed.pop(pending_id, None)

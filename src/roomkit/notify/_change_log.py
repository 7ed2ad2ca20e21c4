"""The notifier's look at its store's change log: which requests changed since its mark.

The change feed's hints may be dropped (a reconnect, too many held while the store was
away, a fault on the way to the outbox); the store's change log
(:class:`~roomkit.stores.base.ChangeTracking`) still names every request created, settled or
voted on since a mark. The notifier keeps the mark of the last look whose steps reached the
outbox, and moves it on only once the steps of the requests that look named are recorded: a
recording that fails leaves it where it was, and the next look names those requests again,
with those changed since. The memory store has no change log (its changes are heard in the
process that made them, and never lost to an outage); there a look names nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass

from roomkit.models.pending_input import PendingInput
from roomkit.stores.base import ChangeMark, ChangeTracking, DurableStore, PendingStore

__all__ = ["ChangeLook", "Look"]

logger = logging.getLogger("roomkit.notify")


@dataclass(frozen=True, slots=True)
class Look:
    """What one look at the change log found."""

    mark: ChangeMark | None
    """Where the log stood at the look (``None`` on a store without one)."""
    changed: frozenset[str] = frozenset()
    """The requests changed since the notifier's mark; none when the log cannot tell (the
    first look, more changed than one look names, the log went back)."""


class ChangeLook:
    """The change log of ``store``, read from the mark of the last look recorded.

    Args:
        store: the handler's store; one that keeps no change log names nothing.
    """

    def __init__(self, store: PendingStore | DurableStore) -> None:
        self._log = store if isinstance(store, ChangeTracking) else None
        self._store = store if isinstance(store, DurableStore) else None
        self._mark: ChangeMark | None = None

    async def look(self, *, caught_up: bool) -> Look:
        """The requests changed since the mark, and where the log stands now.

        Args:
            caught_up: every change since the mark was heard (no catch-up stands for
                some): the changes heard are enough, and the look only says where the
                log stands now.

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        if self._log is None:
            return Look(None)
        if caught_up:
            # Where the log stands is all a recording of changes all heard needs: the
            # cheapest look, which names no request.
            return Look((await self._log.changes_since(None)).mark)
        found = await self._log.changes_since(self._mark)
        if found.pending_ids is None:
            if self._mark is not None:
                logger.warning(
                    "notifier: the store's change log cannot say what changed since the "
                    "steps were last recorded (too much changed, or its data went back): a "
                    "request made and settled meanwhile may go untold"
                )
            return Look(found.mark)
        return Look(found.mark, found.pending_ids)

    def recorded(self, look: Look) -> None:
        """Move the mark to ``look``'s, whose steps are in the outbox now."""
        if look.mark is not None:
            self._mark = look.mark

    async def records(self, pending_ids: Collection[str]) -> list[PendingInput]:
        """The records of ``pending_ids`` still stored, in id order (one read).

        Raises:
            StoreUnavailableError: the store cannot be reached.
        """
        if not pending_ids or self._store is None:
            return []
        found = await self._store.fetch_many(pending_ids)
        return sorted(found, key=lambda request: request.pending_id)

"""Changes heard: the change feed's hints, held until the steps they owe are in the outbox.

A request created is owed an ``announce`` step, one settled a ``settle`` step, a vote on a
quorum approval that edited it an ``edited`` step, and a ``RESYNC`` (changes may have been
missed: a start, a reconnect) a catch-up read from the store. The notifier records them
once a turn (:meth:`HeardChanges.record`); an id added again to the outbox adds nothing, so
recording a change twice is harmless.

While the store is away the changes are held as they are, oldest first, up to
:data:`HELD`: a catch-up finds what is open and what the outbox holds, not a request the
outbox never held that settled meanwhile, whose ending would then go untold. Past the bound,
or after a fault that may come back with the same changes, a catch-up stands for them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from roomkit.core.exceptions import StoreClosedError, StoreUnavailableError
from roomkit.notify._first_notice import OWED
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.stores.outbox import ENDING, Outbox, OutboxItem, now_of, step_id
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["HELD", "RESYNC", "HeardChanges"]

logger = logging.getLogger("roomkit.notify")

HELD = 10_000
"""Changes a notifier holds while its store is away; past that a catch-up stands for them."""

RESYNC = PendingChange(PendingChangeKind.RESYNC)
"""The hint that changes may have been missed: the steps owed are read from the store."""


class HeardChanges:
    """The changes a notifier heard and has not recorded as steps yet, oldest first.

    Args:
        handler: the handler whose requests the changes are of.
        outbox: where their steps go.
    """

    def __init__(self, handler: HumanInputHandler, outbox: Outbox) -> None:
        self.handler = handler
        self.outbox = outbox
        # Hints repeat: the keys keep one of each, in the order first heard.
        self._changes: dict[PendingChange, None] = {}
        # Whether the store was away when the changes were last to be recorded.
        self._holding = False

    def __bool__(self) -> bool:
        return bool(self._changes)

    def hear(self, change: PendingChange) -> None:
        """Note ``change``, to be recorded at the next :meth:`record`."""
        self._changes[change] = None
        if self._holding and len(self._changes) > HELD:
            self._changes = _catch_up_instead(self._changes, held=True)

    async def record(self) -> None:
        """Add the steps the changes heard owe to the outbox.

        Raises:
            StoreUnavailableError: the store is away; the changes are held for the next call.
            Exception: any other fault, as raised; a catch-up stands for the changes.
        """
        if not self._changes:
            return
        taken = list(self._changes)
        self._changes.clear()
        try:
            await self.outbox.add(await self._steps_of(taken))
            self._holding = False
        except BaseException as error:
            # Nothing of them was kept: they are owed again, ahead of those heard since.
            held = dict.fromkeys([*taken, *self._changes])
            self._holding = isinstance(error, StoreUnavailableError | StoreClosedError)
            if not self._holding or len(held) > HELD:
                # A fault that may come back with the same changes, or too many of them: the
                # next turn catches up from the store (what is open, what ended), and tells
                # again of the votes.
                held = _catch_up_instead(held, held=self._holding)
            self._changes = held
            raise

    async def _steps_of(self, changes: list[PendingChange]) -> list[OutboxItem]:
        """The outbox's steps for ``changes``, in order."""
        now = now_of(self.handler)
        items: list[OutboxItem] = []
        for change in changes:
            if change.kind is PendingChangeKind.CREATED:
                items.append(_step(change.pending_id, "announce", now))
            elif change.kind is PendingChangeKind.SETTLED:
                items.append(_step(change.pending_id, "settle", now))
            elif change.kind is PendingChangeKind.VOTED:
                # A vote on a quorum approval still open: after an edit, the approvers who
                # must vote again are told; its outcome comes as SETTLED.
                edited = await self._edited(change.pending_id, now)
                if edited is not None:
                    items.append(edited)
            else:
                items += await self._catch_up(now)
        return items

    async def _catch_up(self, now: float) -> list[OutboxItem]:
        """The steps owed after changes may have been missed (a restart, a reconnect).

        What is open is owed its announcement, due before its ladder's steps however late
        the notifier starts (:data:`OWED`). Every request the outbox holds steps of but no
        ending is owed its ending once it is no longer open (told only to those who heard of
        it), however many settled meanwhile. The owed are read before the open ones: a
        request that settles between the two reads is not taken for open.
        """
        owed = set(await self.outbox.unended())
        items: list[OutboxItem] = []
        for request in await self.handler.list_pending():
            owed.discard(request.pending_id)
            items.append(_step(request.pending_id, "announce", now, due=OWED))
        items += (_step(pending_id, ENDING, now) for pending_id in sorted(owed))
        return items

    async def _edited(self, pending_id: str, now: float) -> OutboxItem | None:
        """The step that tells the approvers of an edit, when the last vote was one (its
        id names the vote: a repeated hint adds nothing)."""
        request = await self.handler.get_request(pending_id)
        if request is None or not request.votes or request.votes[-1].decision != "edit":
            return None
        item_id = f"{pending_id}.edited.{len(request.votes)}"
        return OutboxItem(item_id, pending_id, now, {"job": "edited"}, created=now)


def _step(pending_id: str, job: str, now: float, *, due: float | None = None) -> OutboxItem:
    """The step ``job`` of a request, added at ``now``, due then unless ``due`` says."""
    at = now if due is None else due
    return OutboxItem(step_id(pending_id, job), pending_id, at, {"job": job}, created=now)


def _catch_up_instead(
    changes: Iterable[PendingChange], *, held: bool = False
) -> dict[PendingChange, None]:
    """A catch-up from the store in place of ``changes``, and their votes (a catch-up does
    not find what an edit owes), each request's once; ``held``: they were held for a store
    away, and were too many."""
    if held:
        logger.warning(
            "notifier: over %d changes wait for the store; a catch-up stands for them (a "
            "request neither open nor in the outbox once it is back is not told how it ended)",
            HELD,
        )
    votes = (change for change in changes if change.kind is PendingChangeKind.VOTED)
    return dict.fromkeys([RESYNC, *votes])

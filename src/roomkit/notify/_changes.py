"""Changes heard: the change feed's hints, held until the steps they owe are in the outbox.

A request created is owed an ``announce`` step, one settled a ``settle`` step, a vote on a
quorum approval that edited it an ``edited`` step, and a ``RESYNC`` (changes may have been
missed: a start, a reconnect) a catch-up read from the store. The notifier records them
once a turn (:meth:`HeardChanges.record`); an id added again to the outbox adds nothing, so
recording a change twice is harmless.

While the store is away the changes are held as they are, oldest first, up to
:data:`HELD`. Past the bound, or after a fault that may come back with the same changes, a
catch-up stands for them: it finds what is open and what the outbox holds, and, on a store
that keeps a change log (:class:`~roomkit.stores.base.ChangeTracking`: SQLite, Redis,
PostgreSQL), every request changed since the notifier's *mark*. The mark is where the log
stood at the last look whose steps reached the outbox; each recording looks at the log again
(a catch-up adds the steps of the requests it names), and only once the steps are in the
outbox does the mark move on. So a request made and settled while the changes could not be
recorded is still told how it ended, however many changes were dropped for a catch-up, as
long as the log can still name them (see :mod:`roomkit.notify._change_log`); a step already
in the outbox is added again as nothing, so nothing is told twice. The memory store keeps
no such log, and never goes away.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from roomkit.core.exceptions import StoreClosedError, StoreUnavailableError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.notify._change_log import ChangeLook
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
        # The store's change log, read from the mark of the last recording that went in.
        self._log = ChangeLook(handler.store)

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
            # The log first: a change made after this look is named by the next one. Only a
            # catch-up needs what it names; the changes heard name it all otherwise.
            catching_up = RESYNC in taken
            look = await self._log.look(caught_up=not catching_up)
            items = await self._steps_of(taken)
            if catching_up:
                items = _once(items + await self._steps_of_changed(look.changed, taken))
            await self.outbox.add(items)
            self._log.recorded(look)
            self._holding = False
        except BaseException as error:
            # Nothing of them was kept: they are owed again, ahead of those heard since.
            held = dict.fromkeys([*taken, *self._changes])
            self._holding = isinstance(error, StoreUnavailableError | StoreClosedError)
            if not self._holding or len(held) > HELD:
                # A fault that may come back with the same changes, or too many of them: the
                # next turn catches up from the store (what is open, what ended, what its
                # change log names since the mark), and tells again of the votes.
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

    async def _steps_of_changed(
        self, changed: frozenset[str], taken: list[PendingChange]
    ) -> list[OutboxItem]:
        """The steps of the requests the change log names: an announcement for each
        (owed first, as at a catch-up), an ending for each settled, and what an edit owes.
        A request heard settled needs no read: its steps are known."""
        now = now_of(self.handler)
        settled = {c.pending_id for c in taken if c.kind is PendingChangeKind.SETTLED} & changed
        items: list[OutboxItem] = []
        for pending_id in sorted(settled):
            items += [_step(pending_id, "announce", now, due=OWED), _step(pending_id, ENDING, now)]
        for request in await self._log.records(changed - settled):
            pending_id = request.pending_id
            items.append(_step(pending_id, "announce", now, due=OWED))
            if request.status is not PendingInputStatus.PENDING:
                items.append(_step(pending_id, ENDING, now))
            else:
                edited = _edited_step(request, now)
                if edited is not None:
                    items.append(edited)
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
        return None if request is None else _edited_step(request, now)


def _edited_step(request: PendingInput, now: float) -> OutboxItem | None:
    """The step that tells the approvers of an edit, when ``request``'s last vote was one."""
    if not request.votes or request.votes[-1].decision != "edit":
        return None
    pending_id = request.pending_id
    item_id = f"{pending_id}.edited.{len(request.votes)}"
    return OutboxItem(item_id, pending_id, now, {"job": "edited"}, created=now)


def _step(pending_id: str, job: str, now: float, *, due: float | None = None) -> OutboxItem:
    """The step ``job`` of a request, added at ``now``, due then unless ``due`` says."""
    at = now if due is None else due
    return OutboxItem(step_id(pending_id, job), pending_id, at, {"job": job}, created=now)


def _once(items: list[OutboxItem]) -> list[OutboxItem]:
    """One of each step in ``items``, the first of its id, in order."""
    first: dict[str, OutboxItem] = {}
    for item in items:
        first.setdefault(item.item_id, item)
    return list(first.values())


def _catch_up_instead(
    changes: Iterable[PendingChange], *, held: bool = False
) -> dict[PendingChange, None]:
    """A catch-up from the store in place of ``changes``, and their votes (a catch-up does
    not find what an edit owes), each request's once; ``held``: they were held for a store
    away, and were too many."""
    if held:
        logger.warning(
            "notifier: over %d changes wait for the store; a catch-up from the store's change "
            "log stands for them",
            HELD,
        )
    votes = (change for change in changes if change.kind is PendingChangeKind.VOTED)
    return dict.fromkeys([RESYNC, *votes])

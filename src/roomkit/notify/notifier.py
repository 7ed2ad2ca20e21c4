"""The notifier: follows a handler's change feed and works through the store's outbox.

A request that opens gets an ``announce`` step, one that settles a ``settle`` step, an edit
of a quorum approval an ``edited`` step (to the approvers who vote again), and a ladder's
``remind`` and ``escalate`` steps are recorded by the tool handler when it asks or holds a
call for approval.
A step, when due, works out who is told through which surface and adds one delivery per
surface and recipient; each delivery is claimed, sent and marked done (see
:mod:`roomkit.stores.outbox`). Each surface's deliveries are claimed and
sent in a lane of their own (:mod:`roomkit.notify._lanes`), so that a receiver that hangs
or fails delays no other. What a surface's failure costs is a log line and a count: an
answer never waits on a delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import socket
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from roomkit.core.exceptions import StoreClosedError, StoreError, StoreUnavailableError
from roomkit.core.tasks import end_within
from roomkit.models.clock import bounded_seconds
from roomkit.notify._changes import RESYNC, HeardChanges
from roomkit.notify._deliver import Sender
from roomkit.notify._directory_choice import directory_of
from roomkit.notify._first_notice import ladder_place
from roomkit.notify._lanes import Lane, Lanes, lane_limit
from roomkit.notify._steps import Planner
from roomkit.notify.links import AnswerLinks
from roomkit.notify.surface import Directory, Surface
from roomkit.stores.base import PendingChange
from roomkit.stores.outbox import STEPS, OutboxItem, now_of
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail

__all__ = ["Notifier", "NotifierStatistics"]

logger = logging.getLogger("roomkit.notify")

_GRACE = 1.0
"""Seconds a stopping notifier lets its deliveries in flight finish."""
_HAND_BACK = 2.0
"""Seconds a stopping notifier gives the outbox to take back what it did not finish."""
_BOUND = 0.8
"""The share of the lease one item's work may take before it is left for the lease to end."""
_PATIENCE = 0.6
"""The share of the lease one send may take: a slower one is a failed attempt, retried."""


@dataclass(slots=True)
class NotifierStatistics:
    """What one notifier did since it started (the desk's ``/metrics`` reads it)."""

    delivered: Counter[str] = field(default_factory=Counter)
    """Deliveries done, per surface."""
    failed: Counter[str] = field(default_factory=Counter)
    """Failed attempts, per surface (each retry counts)."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Deliveries given up (refused, or still failing when the retry policy gave up)."""
    unreachable: int = 0
    """Approvers no surface could reach (no contact point, an unknown actor)."""


class Notifier:
    """Tells people about requests, through every surface that reaches them.

    Use it as an async context manager: it delivers while the block runs, and stops
    within about a second when the block ends (what is owed stays in the outbox for the
    next notifier, and a delivery still in flight is handed back to it at once). It may
    run in the agent's process, the desk's, or one of its own.

    Each surface is delivered on its own: its own deliveries in flight (up to
    ``concurrency``) and its own back-off after a failure, so a receiver that hangs or
    fails delays no other surface. Web Push backs off each push service on its own: one
    person's that fails delays no one else's pushes.

    Args:
        handler: the handler whose requests it follows (any store).
        surfaces: where notices go (:class:`~roomkit.notify.Webhook`,
            :class:`~roomkit.notify.Email`, ...); names must differ.
        directory: how to reach each actor (email, Slack id, manager), for a handler with
            no directory of its own; the handler's (``HumanInputHandler(directory=...)``),
            which routes its requests, otherwise.
        desk_url: where answer links point (the desk's ``http://`` or ``https://`` address,
            without a fragment); no links without it.
        link_secret: signs answer links; the desk's key by default (``ROOMKIT_DESK_SECRET``,
            else the key file in ``data_dir``).
        data_dir: the desk's data folder, for its key file.
        lease: seconds a claimed delivery is held before another process may take it (at
            most a century, as ``poll``).
        poll: seconds between looks at the outbox when the change feed is quiet.
        concurrency: deliveries in flight at once through each surface (and steps being
            worked out at once): a whole number from 1 to 10,000.
    """

    def __init__(
        self,
        handler: HumanInputHandler,
        surfaces: Iterable[Surface],
        *,
        directory: Directory | None = None,
        desk_url: str | None = None,
        link_secret: str | bytes | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        lease: float = 30.0,
        poll: float = 1.0,
        concurrency: int = 64,
    ) -> None:
        if not isinstance(handler, HumanInputHandler):
            raise TypeError(f"Notifier takes a HumanInputHandler, got {type(handler).__name__}")
        if isinstance(surfaces, Surface):
            raise TypeError("Notifier takes a list of surfaces: pass [surface]")
        self._surfaces: dict[str, Surface] = {}
        for surface in surfaces:
            if not isinstance(surface, Surface):
                raise TypeError(f"{surface!r} is not a surface (name, reaches, send, aclose)")
            if surface.name in self._surfaces:
                raise ValueError(f"two surfaces are named {surface.name!r}: give each its own")
            self._surfaces[surface.name] = surface
            # A surface that records what became of its deliveries learns where.
            bind = getattr(surface, "bind_handler", None)
            if callable(bind):
                bind(handler)
        if directory is not None and not isinstance(directory, Directory):
            raise TypeError(f"directory must be a Directory, got {type(directory).__name__}")
        lease = bounded_seconds("Notifier(lease=...)", lease)
        poll = bounded_seconds("Notifier(poll=...)", poll)
        concurrency = lane_limit("Notifier(concurrency=...)", concurrency)
        self.handler = handler
        self._shown = ShownTrail(handler)
        self.directory = directory_of(handler, directory)
        self.links = (
            None if desk_url is None else AnswerLinks(desk_url, link_secret, data_dir=data_dir)
        )
        self.lease, self.poll, self.concurrency = float(lease), float(poll), concurrency
        self.outbox = handler.outbox
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._stats = NotifierStatistics()
        self._changes = HeardChanges(handler, self.outbox)
        self._wake = asyncio.Event()
        self._turned = asyncio.Event()
        # Whether the loop is taking changes or claiming, and how many turns it began: what
        # wait_idle() reads of the outbox is current only if neither moved meanwhile.
        self._busy = False
        self._turns = 0
        retries = {
            name: getattr(surface, "retry", None) for name, surface in self._surfaces.items()
        }
        self._lanes = Lanes(retries, concurrency)
        self._sender = Sender(
            handler,
            self.outbox,
            self._surfaces,
            self.directory,
            self.links,
            self._stats,
            self._shown,
            self.owner,
            self.poll,
            self.lease * _PATIENCE,
            self.lease,
        )
        self._planner = Planner(
            handler,
            self.outbox,
            self._surfaces,
            self.directory,
            self._stats,
            self.owner,
            self.poll,
        )
        # Each request's step being worked out last: the request's next step waits for it.
        self._planning: dict[str, asyncio.Task[None]] = {}
        # Each item whose work failed here last time it was tried: its back-off, and when
        # it is due again.
        self._setbacks: dict[str, tuple[float, float]] = {}
        self._stalled = False
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def surfaces(self) -> Mapping[str, Surface]:
        """The surfaces, by name."""
        return dict(self._surfaces)

    def statistics(self) -> NotifierStatistics:
        """Counts since the notifier started."""
        return self._stats

    async def wait_idle(self) -> None:
        """Wait until every request open now is announced, nothing is in flight and nothing
        in the outbox is due yet.

        Ladder steps due later do not count; a delivery waiting to be retried does once due,
        as does an item whose work failed here (handed back to the outbox, due after a
        back-off).
        """
        self._on_change(RESYNC)
        while True:
            if self._task is None:
                raise RuntimeError("the notifier is not running: use `async with notifier:`")
            self._turned.clear()
            if not (self._lanes.busy or self._changes or self._wake.is_set() or self._busy):
                turn = self._turns
                due = await self.outbox.next_due()
                # The loop may have moved while the outbox was read: then look again.
                quiet = turn == self._turns and not (
                    self._busy or self._turned.is_set() or self._lanes.busy or self._wake.is_set()
                )
                if quiet and (due is None or due > now_of(self.handler)):
                    return
                if not quiet:
                    continue
            await self._turned.wait()

    async def __aenter__(self) -> Notifier:
        if self._task is not None:
            raise RuntimeError("this notifier is already running")
        # Following the feed from here on: a request created once this returns is seen.
        unsubscribe = self.handler.subscribe(self._on_change)
        self._on_change(RESYNC)
        self._stopping = False
        self._task = asyncio.create_task(self._run(unsubscribe), name="roomkit-notifier")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop delivering (what is owed stays in the outbox) and close the surfaces.

        Deliveries in flight get about a second to finish; those that do not are handed
        back to the outbox, due at once, for the next notifier (a receiver drops the
        repeat by its ``webhook-id``).
        """
        task, self._task = self._task, None
        if task is not None:
            self._stopping = True
            self._wake.set()
            # The loop stops at its next turn; a turn still waiting on the store is ended.
            await end_within([task], _GRACE)
            await self._hand_back_inflight()
        await self._shown.idle()
        for surface in self._surfaces.values():
            try:
                await surface.aclose()
            except Exception:
                logger.exception("surface %r failed to close", surface.name)

    # -- the loop ----------------------------------------------------------------------------

    def _on_change(self, change: PendingChange) -> None:
        self._changes.hear(change)
        self._wake.set()

    async def _run(self, unsubscribe: Callable[[], None]) -> None:
        outage = False
        try:
            while not self._stopping:
                self._wake.clear()
                self._busy, self._turns = True, self._turns + 1
                try:
                    await self._changes.record()
                    claimed = await self._claim()
                    outage = False
                except Exception as error:
                    # No fault ends the loop: the turn is tried again after a poll.
                    _turn_failed(error, again=outage)
                    claimed, outage = False, True
                finally:
                    self._busy = False
                self._turned.set()
                if not claimed:
                    await self._sleep()
                else:
                    self._stalled = False
                    await asyncio.sleep(0)
        finally:
            unsubscribe()

    async def _hand_back_inflight(self) -> None:
        """Give the deliveries in flight a moment, then cancel them: each hands its item
        back to the outbox as it ends."""
        await end_within(self._lanes.tasks(), _GRACE)

    async def _sleep(self) -> None:
        """Wait for a change, the next item due in a lane that may claim, a lane's back-off
        to end, or a poll, whichever comes first."""
        now = now_of(self.handler)
        delay = self.poll
        claimable = self._lanes.claimable(now)
        try:
            due = await self.outbox.next_due(claimable) if claimable else None
        except StoreError:
            due = None  # the next turn finds out, and says, what is wrong
        if due is not None:
            delay = min(delay, max(0.0, due - now))
        resume = self._lanes.next_resume(now)
        if resume is not None:
            delay = min(delay, resume - now)
        # Due yet not claimed: another notifier took it meanwhile, or the outbox's index
        # of lanes is behind (it is put right by the claim). Look once more, then wait.
        stalled, self._stalled = self._stalled, delay <= 0
        if delay <= 0 and stalled:
            delay = self.poll
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def _claim(self) -> bool:
        """Claim what each lane has room for; whether anything was claimed."""
        lanes, now = self._lanes, now_of(self.handler)
        rooms, others = lanes.rooms(now), lanes.others.room(now)
        if not any(rooms.values()) and others <= 0:
            return False
        items = await self.outbox.claim(self.owner, now, self.lease, others, lanes=rooms)
        for item in sorted(items, key=ladder_place):
            lane = lanes.of(item.lane)
            # A request's steps are worked out one at a time: each after the one before.
            step = item.lane == STEPS
            before = self._planning.get(item.pending_id) if step else None
            task = asyncio.create_task(self._do(item, lane, before))
            lane.inflight.add(task)
            task.add_done_callback(functools.partial(self._done, lane=lane, item=item))
            if step:
                self._planning[item.pending_id] = task
        return bool(items)

    def _done(self, task: asyncio.Task[None], lane: Lane, item: OutboxItem) -> None:
        lane.inflight.discard(task)
        if self._planning.get(item.pending_id) is task:
            del self._planning[item.pending_id]
        self._wake.set()
        self._turned.set()

    async def _do(self, item: OutboxItem, lane: Lane, before: asyncio.Task[None] | None) -> None:
        bound = self.lease * _BOUND
        scope = asyncio.timeout(bound)
        try:
            async with scope:
                if before is not None:
                    # Its request's step before it goes first, whatever became of it.
                    await asyncio.wait([before])
                await self._work(item, lane)
        except asyncio.CancelledError:
            # Stopping: hand the item back at once rather than when the lease lapses.
            await asyncio.shield(self._hand_back(item))
            raise
        except Exception as error:
            slow = isinstance(error, TimeoutError) and scope.expired()
            await self._try_again(item, None if slow else error)
        else:
            self._setbacks.pop(item.item_id, None)

    async def _work(self, item: OutboxItem, lane: Lane) -> None:
        """Work out or send ``item``; while the store is away, try again every poll.

        The item stays claimed meanwhile, so it goes on as soon as the store is back rather
        than a lease later. Nothing is sent twice: a delivery whose notice went out records
        that on its own (:meth:`Sender.deliver`), and what fails before the send sent nothing.
        """
        while True:
            try:
                if item.body.get("job") == "deliver":
                    await self._sender.deliver(item, lane)
                else:
                    await self._planner.plan(item)
                return
            except StoreUnavailableError as error:
                logger.debug("notifier: %s waits for the store: %s", item.item_id, error)
            await asyncio.sleep(self.poll)

    async def _try_again(self, item: OutboxItem, error: Exception | None) -> None:
        """Hand ``item``, whose work failed (``error``; ``None``: it outlasted its bound),
        back to the outbox, due after a back-off: a poll after its first failure here, twice
        the last one after each further failure, at most a lease. A fault that clears is
        over within a poll or two; one that stays is tried, and logged, once a lease."""
        now = now_of(self.handler)
        last, _ = self._setbacks.pop(item.item_id, (self.poll / 2, now))
        delay = min(2 * last, self.lease)
        # An item another notifier took since, or one gone, is not seen here again.
        for item_id, (_, due) in list(self._setbacks.items()):
            if due + self.lease < now:
                del self._setbacks[item_id]
        try:
            async with asyncio.timeout(_HAND_BACK):
                held = await self.outbox.renew(item.item_id, self.owner, now + delay)
        except Exception:
            then = "it comes back when its lease lapses"
        else:
            then = f"trying it again in {delay:.3g}s" if held else "it is no longer held here"
            if held:
                self._setbacks[item.item_id] = (delay, now + delay)
        if error is None:
            bound = self.lease * _BOUND
            logger.warning("notifier: %s took longer than %.0fs; %s", item.item_id, bound, then)
        else:
            logger.error("notifier: %s failed; %s", item.item_id, then, exc_info=error)

    async def _hand_back(self, item: OutboxItem) -> None:
        self._setbacks.pop(item.item_id, None)
        try:
            async with asyncio.timeout(_HAND_BACK):
                await self.outbox.renew(item.item_id, self.owner, now_of(self.handler))
        except Exception:
            logger.warning("notifier: could not hand %s back; its lease lapses", item.item_id)


def _turn_failed(error: Exception, *, again: bool) -> None:
    """Log a failed turn of the loop; an outage of the store once (``again``: not the first
    turn of it in a row)."""
    if isinstance(error, StoreUnavailableError | StoreClosedError):
        log = logger.debug if again else logger.warning
        log("notifier: the store is unreachable (%s); trying again", error)
    else:
        logger.error("notifier: a turn failed; trying again", exc_info=error)

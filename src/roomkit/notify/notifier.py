"""The notifier: follows a handler's change feed and works through the store's outbox.

A request that opens gets an ``announce`` step, one that settles a ``settle`` step, an edit
of a quorum approval an ``edited`` step (to the approvers who vote again), and a ladder's
``remind`` and ``escalate`` steps are recorded by the tool handler when it asks or holds a
call for approval.
A step, when due, works out who is told through which surface and adds one delivery per
surface and recipient; each delivery is claimed, sent and marked done (see
:mod:`roomkit.tools.human_input.stores.outbox`). What a surface's failure costs is a log
line and a count: an answer never waits on a delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from roomkit.core.exceptions import StoreClosedError, StoreError, StoreUnavailableError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.notify._first_notice import FOLLOW_UPS, first_notice_out
from roomkit.notify.links import AnswerLinks
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Directory, Notice, NoticeType, Surface
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail
from roomkit.tools.human_input.stores.base import PendingChange, PendingChangeKind
from roomkit.tools.human_input.stores.outbox import (
    ENDING,
    OutboxItem,
    now_of,
    outbox_for,
    step_id,
)

__all__ = ["Notifier", "NotifierStatistics"]

logger = logging.getLogger("roomkit.notify")

_PENDING = PendingInputStatus.PENDING
_TYPES: dict[str, NoticeType] = {
    "announce": "question_pending",
    "remind": "question_reminder",
    "escalate": "question_escalated",
    "edited": "question_edited",
    "settle": "question_settled",
}
_GRACE = 1.0
"""Seconds a stopping notifier lets its deliveries in flight finish."""


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


def _outcome(request: PendingInput) -> str:
    return "withdrawn" if request.withdrawn else request.status.value


def approvers_of(request: PendingInput) -> tuple[str, ...]:
    """Who may answer ``request`` now: its approvers, else its actor."""
    named: tuple[str, ...] = tuple(getattr(request, "approvers", ()) or ())
    if named:
        return named
    return (request.actor_id,) if request.actor_id else ()


class Notifier:
    """Tells people about requests, through every surface that reaches them.

    Use it as an async context manager: it delivers while the block runs, and stops
    within about a second when the block ends (what is owed stays in the outbox for the
    next notifier). It may run in the agent's process, the desk's, or one of its own.

    Args:
        handler: the handler whose requests it follows (any store).
        surfaces: where notices go (:class:`~roomkit.notify.Webhook`,
            :class:`~roomkit.notify.Email`, ...); names must differ.
        directory: how to reach each actor (email, Slack id, manager).
        desk_url: where answer links point; no links without it.
        link_secret: signs answer links; the desk's key by default (``ROOMKIT_DESK_SECRET``,
            else the key file in ``data_dir``).
        data_dir: the desk's data folder, for its key file.
        lease: seconds a claimed delivery is held before another process may take it.
        poll: seconds between looks at the outbox when the change feed is quiet.
        concurrency: deliveries in flight at once.
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
        if directory is not None and not isinstance(directory, Directory):
            raise TypeError(f"directory must be a Directory, got {type(directory).__name__}")
        if not (lease > 0 and poll > 0 and concurrency >= 1):
            raise ValueError("lease and poll must be positive, concurrency at least 1")
        self.handler = handler
        self._shown = ShownTrail(handler)
        self.directory = directory if directory is not None else Directory()
        self.links = (
            None if desk_url is None else AnswerLinks(desk_url, link_secret, data_dir=data_dir)
        )
        self.lease, self.poll, self.concurrency = float(lease), float(poll), concurrency
        self.outbox = outbox_for(handler)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._stats = NotifierStatistics()
        self._changes: deque[PendingChange] = deque()
        self._wake = asyncio.Event()
        self._turned = asyncio.Event()
        # Whether the loop is taking changes or claiming, and how many turns it began: what
        # wait_idle() reads of the outbox is current only if neither moved meanwhile.
        self._busy = False
        self._turns = 0
        self._inflight: set[asyncio.Task[None]] = set()
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

        Ladder steps due later do not count; a delivery waiting to be retried does once due.
        """
        self._on_change(PendingChange(PendingChangeKind.RESYNC))
        while True:
            if self._task is None:
                raise RuntimeError("the notifier is not running: use `async with notifier:`")
            self._turned.clear()
            if not (self._inflight or self._changes or self._wake.is_set() or self._busy):
                turn = self._turns
                due = await self.outbox.next_due()
                # The loop may have moved while the outbox was read: then look again.
                quiet = turn == self._turns and not (
                    self._busy or self._turned.is_set() or self._inflight or self._wake.is_set()
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
        self._on_change(PendingChange(PendingChangeKind.RESYNC))
        self._stopping = False
        self._task = asyncio.create_task(self._run(unsubscribe), name="roomkit-notifier")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop delivering (what is owed stays in the outbox) and close the surfaces."""
        task, self._task = self._task, None
        if task is not None:
            # Deliveries in flight get a moment to finish and be marked done; the rest are
            # handed back to the outbox for the next notifier.
            self._stopping = True
            self._wake.set()
            await asyncio.wait([task], timeout=_GRACE)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._shown.idle()
        for surface in self._surfaces.values():
            try:
                await surface.aclose()
            except Exception:
                logger.exception("surface %r failed to close", surface.name)

    # -- the loop ----------------------------------------------------------------------------

    def _on_change(self, change: PendingChange) -> None:
        self._changes.append(change)
        self._wake.set()

    async def _run(self, unsubscribe: Callable[[], None]) -> None:
        outage = False
        try:
            while not self._stopping:
                self._wake.clear()
                self._busy, self._turns = True, self._turns + 1
                try:
                    await self._take_changes()
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
                    await asyncio.sleep(0)
        finally:
            unsubscribe()
            if self._inflight:
                await asyncio.wait(list(self._inflight), timeout=_GRACE)
            tasks = list(self._inflight)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _sleep(self) -> None:
        delay = self.poll
        try:
            due = await self.outbox.next_due()
        except StoreError:
            due = None  # the next turn finds out, and says, what is wrong
        if due is not None:
            delay = min(delay, max(0.0, due - now_of(self.handler)))
        if delay <= 0 and len(self._inflight) >= self.concurrency:
            delay = self.poll
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    async def _take_changes(self) -> None:
        if not self._changes:
            return
        now = now_of(self.handler)
        items: list[OutboxItem] = []
        while self._changes:
            change = self._changes.popleft()
            if change.kind is PendingChangeKind.CREATED:
                items.append(self._step(change.pending_id, "announce", now))
            elif change.kind is PendingChangeKind.SETTLED:
                items.append(self._step(change.pending_id, "settle", now))
            elif change.kind is PendingChangeKind.VOTED:
                # A vote on a quorum approval still open: after an edit, the approvers who
                # must vote again are told; its outcome comes as SETTLED.
                edited = await self._edited(change.pending_id, now)
                if edited is not None:
                    items.append(edited)
            else:
                items += await self._catch_up(now)
        await self.outbox.add(items)

    async def _catch_up(self, now: float) -> list[OutboxItem]:
        """The steps owed after changes may have been missed (a restart, a reconnect).

        What is open is owed its announcement; every request the outbox holds steps of but
        no ending is owed its ending once it is no longer open (told only to those who heard
        of it), however many settled meanwhile. The owed are read before the open ones: a
        request that settles between the two reads is not taken for open.
        """
        owed = set(await self.outbox.unended())
        items: list[OutboxItem] = []
        for request in await self.handler.list_pending():
            owed.discard(request.pending_id)
            items.append(self._step(request.pending_id, "announce", now))
        items += (self._step(pending_id, ENDING, now) for pending_id in sorted(owed))
        return items

    async def _edited(self, pending_id: str, now: float) -> OutboxItem | None:
        """The step that tells the approvers of an edit, when the last vote was one (its
        id names the vote: a repeated hint adds nothing)."""
        request = await self.handler.get_request(pending_id)
        if request is None or not request.votes or request.votes[-1].decision != "edit":
            return None
        item_id = f"{pending_id}.edited.{len(request.votes)}"
        return OutboxItem(item_id, pending_id, now, {"job": "edited"}, created=now)

    def _step(self, pending_id: str, job: str, now: float) -> OutboxItem:
        return OutboxItem(step_id(pending_id, job), pending_id, now, {"job": job}, created=now)

    async def _claim(self) -> bool:
        room = self.concurrency - len(self._inflight)
        if room <= 0:
            return False
        items = await self.outbox.claim(self.owner, now_of(self.handler), self.lease, room)
        for item in items:
            task = asyncio.create_task(self._do(item))
            self._inflight.add(task)
            task.add_done_callback(self._done)
        return bool(items)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._wake.set()
        self._turned.set()

    async def _do(self, item: OutboxItem) -> None:
        try:
            async with asyncio.timeout(self.lease * 0.8):
                if item.body.get("job") == "deliver":
                    await self._deliver(item)
                else:
                    await self._plan(item)
        except asyncio.CancelledError:
            # Stopping: hand the item back at once rather than when the lease lapses.
            await asyncio.shield(self._hand_back(item))
            raise
        except StoreUnavailableError as error:
            logger.warning("notifier: %s left for later: %s", item.item_id, error)
        except Exception:
            logger.exception("notifier: %s failed; it comes back when its lease lapses", item)

    async def _hand_back(self, item: OutboxItem) -> None:
        try:
            await self.outbox.renew(item.item_id, self.owner, now_of(self.handler))
        except Exception:
            logger.debug("could not hand %s back; its lease lapses instead", item.item_id)

    # -- steps: who is told through which surface ---------------------------------------------

    async def _plan(self, item: OutboxItem) -> None:
        job = str(item.body.get("job"))
        request = await self.handler.get_request(item.pending_id)
        open_ = request is not None and request.status is _PENDING
        if request is None or job not in _TYPES or (job != "settle") != open_:
            await self.outbox.complete(item.item_id, {"skipped": "nothing to tell"})
            return
        approvers = approvers_of(request)
        if job == "escalate":
            added = await self._escalate(request, str(item.body.get("to", "manager")))
            approvers = tuple(dict.fromkeys((*approvers, *added)))
        if job == "settle":
            targets = await self._told(item.pending_id)
        else:
            targets = self._targets(approvers, warn=job == "announce")
        now = now_of(self.handler)
        body = {"job": "deliver", "type": _TYPES[job], "approvers": list(approvers)}
        # Due since the step was added: behind a backlog, a step's deliveries go before
        # the steps added after it, so that the first notices leave at once.
        deliveries = [
            OutboxItem(
                f"{item.item_id}.{name}.{recipient or '-'}",
                item.pending_id,
                min(item.created, now),
                {**body, "surface": name, "recipient": recipient},
                created=now,
            )
            for name, recipient in targets
        ]
        await self.outbox.add(deliveries)
        await self.outbox.complete(item.item_id, {"deliveries": len(deliveries)})

    def _targets(self, approvers: tuple[str, ...], *, warn: bool) -> list[tuple[str, str | None]]:
        targets: list[tuple[str, str | None]] = []
        reached: set[str] = set()
        for name, surface in self._surfaces.items():
            if surface.reaches(None, None):
                targets.append((name, None))
                continue
            for actor in approvers:
                if surface.reaches(actor, self.directory.get(actor)):
                    targets.append((name, actor))
                    reached.add(actor)
        personal = any(not s.reaches(None, None) for s in self._surfaces.values())
        for actor in approvers if warn and personal else ():
            if actor not in reached:
                self._stats.unreachable += 1
                logger.warning(
                    "notifier: no surface reaches %r: add Directory({%r: Person(email=...)}) "
                    "or a surface for them",
                    actor,
                    actor,
                )
        return targets

    async def _told(self, pending_id: str) -> list[tuple[str, str | None]]:
        """Who hears how a request ended: every surface that tells no one in particular
        once the request was announced, and each person a notice reached (or is reaching)."""
        told: dict[tuple[str, str | None], None] = {}
        announced = False
        for earlier in await self.outbox.items_for(pending_id):
            body, receipt = earlier.body, earlier.receipt or {}
            announced = announced or earlier.item_id == step_id(pending_id, "announce")
            # In flight counts as told; refused or skipped does not.
            sent = not earlier.done or not ({"failed", "skipped"} & receipt.keys())
            if sent and body.get("job") == "deliver" and body.get("type") != "question_settled":
                told[(str(body["surface"]), body.get("recipient"))] = None
        if announced:
            for name, surface in self._surfaces.items():
                if surface.reaches(None, None):
                    told[(name, None)] = None
        return list(told)

    async def _escalate(self, request: PendingInput, to: str) -> list[str]:
        current = approvers_of(request)
        if to == "manager":
            people = [(a, self.directory.get(a)) for a in current]
            wanted = [p.manager for _, p in people if p is not None and p.manager]
            if not wanted:
                logger.warning(
                    "notifier: escalate(to='manager') on %s: the directory names no manager "
                    "for %s: add Person(manager=...)",
                    request.pending_id,
                    ", ".join(current) or "a request with no actor",
                )
        else:
            wanted = [to]
        new = [actor for actor in dict.fromkeys(wanted) if actor not in current]
        add = getattr(self.handler, "add_approvers", None)
        if new and add is not None:
            await add(request.pending_id, new, surface="ladder")
        elif new:
            logger.warning(
                "notifier: this handler cannot add approvers: %s is told of %s but cannot "
                "answer it",
                ", ".join(new),
                request.pending_id,
            )
        return new

    # -- deliveries -----------------------------------------------------------------------------

    async def _deliver(self, item: OutboxItem) -> None:
        body = item.body
        surface = self._surfaces.get(str(body.get("surface")))
        request = await self.handler.get_request(item.pending_id)
        kind: NoticeType = body["type"]
        if (
            surface is None
            or request is None
            or (kind != "question_settled" and request.status is not _PENDING)
        ):
            # Nothing further is sent once a request settled; a surface since removed skips.
            await self.outbox.complete(item.item_id, {"skipped": "not sent"})
            return
        if kind in FOLLOW_UPS and not await first_notice_out(
            self.outbox, item, now_of(self.handler)
        ):
            # The announcement is still on its way: this follow-up is looked at a poll later.
            await self.outbox.renew(item.item_id, self.owner, now_of(self.handler) + self.poll)
            return
        notice = await self._notice(item, request, kind)
        try:
            receipt = await surface.send(notice)
        except DeliveryError as error:
            await self._failed(item, surface, str(error), error.retry)
            return
        except Exception as error:
            logger.exception("surface %r raised while sending %s", surface.name, item.item_id)
            await self._failed(item, surface, f"{type(error).__name__}: {error}", True)
            return
        await self.outbox.complete(item.item_id, dict(receipt) if receipt else {})
        self._stats.delivered[surface.name] += 1
        if kind == "question_pending":
            await self._shown.record([request.pending_id], surface.name, notice.recipient)

    async def _notice(self, item: OutboxItem, request: PendingInput, kind: NoticeType) -> Notice:
        recipient = item.body.get("recipient")
        approvers = tuple(item.body.get("approvers") or approvers_of(request))
        left = self.handler.time_left(request)
        deadline_at = None if left is None else datetime.now(UTC) + timedelta(seconds=left)
        urls: dict[str, str] = {}
        if self.links is not None and request.status is _PENDING:
            for actor in [recipient] if recipient else approvers:
                urls[actor] = self.links.url(request.pending_id, actor, left)
        receipts: tuple[Mapping[str, Any], ...] = ()
        if kind != "question_pending" and recipient is not None:
            receipts = tuple(
                earlier.receipt
                for earlier in await self.outbox.items_for(request.pending_id)
                if earlier.done
                and earlier.receipt
                and earlier.body.get("surface") == item.body.get("surface")
                and earlier.body.get("recipient") == recipient
            )
        settled = kind == "question_settled"
        return Notice(
            type=kind,
            delivery_id=item.item_id,
            request=request,
            recipient=recipient,
            person=None if recipient is None else self.directory.get(recipient),
            answer_url=urls.get(recipient) if recipient else None,
            desk_url=None if self.links is None else self.links.desk_url,
            outcome=_outcome(request) if settled else None,
            answered_by=request.settled_by if settled else None,
            answered_via=await self._answered_via(request) if settled else None,
            receipts=receipts,
            approvers=approvers,
            answer_urls=urls,
            deadline_at=deadline_at,
        )

    async def _answered_via(self, request: PendingInput) -> str | None:
        history = getattr(self.handler, "history", None)
        if history is None or request.status is not PendingInputStatus.RESOLVED:
            return None
        try:
            entries = await history(request.pending_id)
        except Exception:
            return None
        for entry in reversed(list(entries)):
            if entry.get("type") in ("decided", "settled") and entry.get("surface"):
                return str(entry["surface"])
        return None

    async def _failed(self, item: OutboxItem, surface: Surface, problem: str, retry: bool) -> None:
        self._stats.failed[surface.name] += 1
        policy: Retry = getattr(surface, "retry", None) or Retry()
        now = now_of(self.handler)
        if retry and now - item.created < policy.give_up:
            delay = policy.delay(item.attempts + 1)
            logger.warning(
                "%s could not deliver %s (%s); retrying in %.1fs",
                surface.name,
                item.item_id,
                problem,
                delay,
            )
            await self.outbox.postpone(item.item_id, now + delay)
            return
        self._stats.dropped[surface.name] += 1
        why = "gave up after retrying" if retry else "refused"
        logger.error("%s %s on %s: %s", surface.name, why, item.item_id, problem)
        await self.outbox.complete(item.item_id, {"failed": problem})


def _turn_failed(error: Exception, *, again: bool) -> None:
    """Log a failed turn of the loop; an outage of the store once (``again``: not the first
    turn of it in a row)."""
    if isinstance(error, StoreUnavailableError | StoreClosedError):
        log = logger.debug if again else logger.warning
        log("notifier: the store is unreachable (%s); trying again", error)
    else:
        logger.error("notifier: a turn failed; trying again", exc_info=error)

"""One delivery: the notice built from the request as it is now, sent through its surface,
and what became of it recorded in the outbox.

A delivery that went through is marked done with the surface's receipt. One that failed is
a log line (never a traceback: a receiver that hangs, refuses, resets or answers garbage is
an expected failure) and a count; it is retried on its surface's schedule when worth it
(:class:`~roomkit.notify.retry.Retry`), else dropped. Its lane learns either way (see
:mod:`roomkit.notify._lanes`).

A surface may say where a notice goes before it sends it
(:attr:`~roomkit.notify.surface.Notice.sending`): that is kept with the delivery at once, so
that when the process dies during the send and the request settles before the delivery is
taken up again (it then ends skipped, ``"partial": true``), the ending still goes there.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from roomkit.core.exceptions import StoreError, StoreUnavailableError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.notify._first_notice import FOLLOW_UPS, earlier_notices_out, first_notice_out
from roomkit.notify._lanes import Lane
from roomkit.notify.links import AnswerLinks
from roomkit.notify.retry import Retry
from roomkit.notify.surface import SENDING, DeliveryError, Directory, Notice, NoticeType, Surface
from roomkit.stores.outbox import Outbox, OutboxItem, now_of
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail

if TYPE_CHECKING:
    from roomkit.notify.notifier import NotifierStatistics

__all__ = ["Sender", "approvers_of"]

logger = logging.getLogger("roomkit.notify")

_PENDING = PendingInputStatus.PENDING


async def as_it_stands(handler: HumanInputHandler, pending_id: str) -> PendingInput | None:
    """The request ``pending_id`` as it stands now: one past its deadline that nobody
    waits on any more (its agent stopped) is timed out here, so that it is not reminded
    of nor escalated with links that no longer answer, and its ending goes out."""
    request = await handler.get_request(pending_id)
    current = [] if request is None else await handler.expire_overdue([request])
    return current[0] if current else None


def approvers_of(request: PendingInput) -> tuple[str, ...]:
    """Who may answer ``request`` now: its approvers, else its actor."""
    named: tuple[str, ...] = tuple(getattr(request, "approvers", ()) or ())
    if named:
        return named
    return (request.actor_id,) if request.actor_id else ()


def joined(kept: Mapping[str, Any] | None, receipt: Mapping[str, Any]) -> dict[str, Any]:
    """``receipt``, with what earlier attempts of the same delivery got through (``kept``):
    a list in both is joined, the kept one's first; any other field of ``receipt`` wins."""
    done = dict(kept or {})
    for key, value in receipt.items():
        before = done.get(key)
        if isinstance(before, list) and isinstance(value, list):
            done[key] = before + [v for v in value if v not in before]
        else:
            done[key] = value
    return done


def went_through(receipt: Mapping[str, Any] | None) -> bool:
    """Whether ``receipt``, kept with a delivery not done, says some of it went through (not
    only where an attempt was :data:`SENDING`)."""
    return bool(receipt) and any(key != SENDING for key in receipt or {})


def _asked_wait(failure: DeliveryError, policy: Retry) -> float:
    """The seconds ``failure`` asks its retry to wait (its ``retry_after``), at most the
    surface's give-up time: a receiver asking for years (``inf``, ``1e9``) parks nothing
    past the time a delivery is given up after; one that is not a number asks nothing."""
    wait = failure.retry_after
    if isinstance(wait, bool) or not isinstance(wait, int | float) or math.isnan(wait):
        return 0.0
    return float(min(max(wait, 0.0), policy.give_up))


def _outcome(request: PendingInput) -> str:
    return "withdrawn" if request.withdrawn else request.status.value


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt at a delivery: what, through which surface and lane, begun when."""

    item: OutboxItem
    surface: Surface
    lane: Lane
    started: float
    """On the store's clock."""


@dataclass(slots=True)
class Sender:
    """What a notifier's deliveries need: its handler and outbox, surfaces, directory and
    links, and where it counts."""

    handler: HumanInputHandler
    outbox: Outbox
    surfaces: Mapping[str, Surface]
    directory: Directory
    links: AnswerLinks | None
    stats: NotifierStatistics
    shown: ShownTrail
    owner: str
    poll: float
    patience: float
    """Seconds one send may take; past them it is a failed attempt, retried with back-off
    (the claim's lease ends a little later)."""
    lease: float
    """Seconds a claim holds an item: a send that says where it goes holds it this long."""

    async def deliver(self, item: OutboxItem, lane: Lane) -> None:
        """Send the delivery ``item`` (claimed by this notifier) and record what came of it."""
        body = item.body
        surface = self.surfaces.get(str(body.get("surface")))
        request = await as_it_stands(self.handler, item.pending_id)
        kind: NoticeType = body["type"]
        if (
            surface is None
            or request is None
            or (kind != "question_settled" and request.status is not _PENDING)
        ):
            # Nothing further is sent once a request settled; a surface since removed skips.
            await self._complete(item, {"skipped": "not sent"})
            return
        now = now_of(self.handler)
        if (kind in FOLLOW_UPS and not await first_notice_out(self.outbox, item, now)) or (
            kind == "question_settled" and not await earlier_notices_out(self.outbox, item)
        ):
            # An earlier notice is still on its way: this one is looked at a poll later.
            await self.outbox.renew(item.item_id, self.owner, now + self.poll)
            return
        if lane.given_up(item.created, now):
            self._dropped(surface.name, item, "gave up: the surface kept failing meanwhile")
            await self._complete(item, {"failed": "the surface kept failing"})
            return
        attempt = Attempt(item, surface, lane, now_of(self.handler))
        try:
            notice = await self._notice(item, request, kind)
        except StoreError:
            raise  # an outage: the item is left for later
        except Exception as error:
            # A notice that cannot be made now never can: it is dropped, not retried.
            logger.exception("could not make the notice of %s", item.item_id)
            failure = DeliveryError(f"{type(error).__name__}: {error}", retry=False)
            await self._failed(attempt, failure)
            return
        try:
            async with asyncio.timeout(self.patience):
                receipt = await surface.send(notice)
        except DeliveryError as error:
            await self._failed(attempt, error)
            return
        except TimeoutError:
            # It may have landed (a mail server that queued it, then stalled): retried as a
            # failure is, counted, backed off and given up on in the end.
            problem = f"no answer within {self.patience:.0f}s"
            await self._failed(attempt, DeliveryError(problem, retry=True))
            return
        except StoreError:
            raise  # where it goes could not be kept: nothing was sent, the item waits
        except Exception as error:
            # A surface that raises something else has a fault of its own: its traceback.
            logger.exception("surface %r raised while sending %s", surface.name, item.item_id)
            failure = DeliveryError(f"{type(error).__name__}: {error}", retry=True)
            await self._failed(attempt, failure)
            return
        lane.delivered()
        await self._record_sent(item, receipt or {})
        self.stats.delivered[surface.name] += 1
        # A surface that skipped the notice (not one for it) showed nobody anything; one
        # that showed it in part on an earlier attempt has said so already.
        if kind == "question_pending" and not (
            (receipt and "skipped" in receipt) or went_through(item.receipt)
        ):
            await self.shown.record([request.pending_id], surface.name, notice.recipient)

    async def _notice(self, item: OutboxItem, request: PendingInput, kind: NoticeType) -> Notice:
        recipient = item.body.get("recipient")
        approvers = tuple(item.body.get("approvers") or approvers_of(request))
        left = self.handler.time_left(request)
        deadline_at = None if left is None else datetime.now(UTC) + timedelta(seconds=left)
        urls: dict[str, str] = {}
        if self.links is not None and request.status is _PENDING:
            for actor in [recipient] if recipient else approvers:
                try:
                    urls[actor] = self.links.url(request.pending_id, actor, left)
                except ValueError as error:
                    # An actor no link can name (a space at its end, say): no link for them.
                    logger.warning("no answer link for %r on %s: %s", actor, item.item_id, error)
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
            got_through={k: v for k, v in (item.receipt or {}).items() if k != SENDING},
            sending=None if settled else functools.partial(self._sending, item),
        )

    async def _sending(self, item: OutboxItem, where: Mapping[str, Any]) -> None:
        """Keep ``where`` the notice of ``item`` is about to go with it, before the send,
        joined to where earlier attempts were sending (any of them may have reached it)."""
        before = (item.receipt or {}).get(SENDING)
        receipt = {**(item.receipt or {}), SENDING: joined(before, where)}
        until = now_of(self.handler) + self.lease
        if not await self.outbox.renew(item.item_id, self.owner, until, receipt=receipt):
            logger.warning("notifier: %s is no longer held here; sent all the same", item.item_id)

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

    async def _failed(self, attempt: Attempt, failure: DeliveryError) -> None:
        """Record a failed attempt: retried later (``failure.retry``), or dropped. What went
        through all the same (:attr:`DeliveryError.receipt`) is kept with the delivery; a
        failure of the delivery's own (:attr:`DeliveryError.alone`) does not back its lane
        off; the retry waits at least :attr:`DeliveryError.retry_after` seconds, never past the
        surface's give-up time (:func:`_asked_wait`)."""
        problem, through = str(failure), failure.receipt
        item, surface = attempt.item, attempt.surface
        self.stats.failed[surface.name] += 1
        policy: Retry = getattr(surface, "retry", None) or Retry()
        now = now_of(self.handler)
        first = not went_through(item.receipt)
        if through and first and item.body.get("type") == "question_pending":
            # A device showed the question: the person was shown it, whatever comes next.
            await self.shown.record([item.pending_id], surface.name, item.body.get("recipient"))
        if through:
            item = replace(item, receipt=joined(item.receipt, through))
        if not failure.retry:
            self._dropped(surface.name, item, problem, refused=True)
            await self._complete(item, {"failed": problem})
            return
        paused = 0.0 if failure.alone else attempt.lane.failed(attempt.started, now)
        if now - item.created < policy.give_up:
            delay = max(policy.delay(item.attempts + 1), _asked_wait(failure, policy))
            logger.warning(
                "%s could not deliver %s (%s); retrying in %.1fs%s",
                surface.name,
                item.item_id,
                problem,
                delay,
                f"; its other deliveries wait {paused:.1f}s" if paused else "",
            )
            await self.outbox.postpone(item.item_id, now + delay, item.receipt)
            return
        self._dropped(surface.name, item, problem)
        await self._complete(item, {"failed": problem})

    async def _record_sent(self, item: OutboxItem, receipt: Mapping[str, Any]) -> None:
        """Mark ``item``, whose notice went out, done; while the store is away, try again
        every poll (the item stays claimed), so that the notice is not sent again."""
        while True:
            try:
                await self._complete(item, receipt)
                return
            except StoreUnavailableError as error:
                logger.debug("notifier: %s sent, waits for the store: %s", item.item_id, error)
            await asyncio.sleep(self.poll)

    async def _complete(self, item: OutboxItem, receipt: Mapping[str, Any]) -> None:
        """Mark ``item`` done with ``receipt``, joined to what earlier attempts of it got
        through, or said they were sending to (``"partial": true`` when it ends failed or
        skipped all the same: it may have reached someone)."""
        done = joined(item.receipt, receipt)
        if item.receipt and {"failed", "skipped"} & receipt.keys():
            done["partial"] = True
        await self.outbox.complete(item.item_id, done)

    def _dropped(
        self, surface: str, item: OutboxItem, problem: str, *, refused: bool = False
    ) -> None:
        self.stats.dropped[surface] += 1
        why = "refused" if refused else "gave up after retrying"
        logger.error("%s %s on %s: %s", surface, why, item.item_id, problem)

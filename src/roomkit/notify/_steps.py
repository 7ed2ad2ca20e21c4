"""Steps: who is told of a request, through which surface, when a step comes due.

An announcement, a ladder's reminder or escalation, an edit of a quorum approval or an
ending is a step in the outbox; when due, it becomes one delivery per surface and
recipient (added to the outbox, each in its surface's lane), and is marked done. An
ending is told to whoever heard of the request; an escalation first adds its approvers; a
reassignment (a shift change, the first person on call) is told to its new person unless a
step worked out after it told them already.

A request left with an on-call schedule that names nobody (made, or escalated to it, in a
gap between shifts) gets a ``gap`` step per schedule, due every :data:`GAP_CHECK` seconds:
each time it routes the request again, until the schedule names someone, who is assigned it
and told of it by the reassignment that assigning adds. The step lives in the outbox, so any
notifier on the store, started before or after, notices the shift's start; nobody need look
at the request.

A notifier works out a request's steps one at a time, in ladder order, and none of an open
request's before its announcement, whichever notifier holds that (see
:mod:`roomkit.notify._first_notice`): an escalation adds approvers, and an announcement or a
reminder worked out after it would tell them what was not meant for them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.notify._deliver import approvers_of, as_it_stands
from roomkit.notify._first_notice import announced_first
from roomkit.notify.surface import Directory, NoticeType, Surface
from roomkit.stores.outbox import Outbox, OutboxItem, now_of, step_id
from roomkit.tools.human_input import HumanInputHandler

if TYPE_CHECKING:
    from roomkit.notify.notifier import NotifierStatistics
    from roomkit.routing import Router

__all__ = ["Planner"]

logger = logging.getLogger("roomkit.notify")

_PENDING = PendingInputStatus.PENDING
_TYPES: dict[str, NoticeType] = {
    "announce": "question_pending",
    "remind": "question_reminder",
    "escalate": "question_escalated",
    "reassign": "question_escalated",
    "edited": "question_edited",
    "settle": "question_settled",
}


_LADDER = frozenset({"remind", "escalate"})
"""The jobs of a ladder's steps."""

_ESCALATING = "escalating"
"""The receipt of an escalation step whose approvers are being added: who they are, kept
with the step before they are added."""

GAP = "gap"
"""The job of the step that looks for the next person on call of a request made in a gap."""

GAP_CHECK = 60.0
"""Seconds between two looks of a ``gap`` step at whether its schedule names someone."""


@dataclass(slots=True)
class Planner:
    """What a notifier's steps need: its handler and outbox, surfaces and directory, where
    it counts, who it claims as and how often it looks again."""

    handler: HumanInputHandler
    outbox: Outbox
    surfaces: Mapping[str, Surface]
    directory: Directory
    stats: NotifierStatistics
    owner: str
    poll: float
    """Seconds before a step handed back (its announcement not worked out yet) is due again."""

    async def plan(self, item: OutboxItem) -> None:
        """Work out the deliveries of the step ``item`` (claimed by this notifier), add
        them, and mark the step done."""
        job = str(item.body.get("job"))
        request = await as_it_stands(self.handler, item.pending_id)
        open_ = request is not None and request.status is _PENDING
        if job == GAP:
            await self._gap(item, request if open_ else None)
            return
        if request is None or job not in _TYPES or (job != "settle") != open_:
            await self.outbox.complete(item.item_id, {"skipped": "nothing to tell"})
            return
        if item.body.get("fallback") and await self._own_ladder(item.pending_id):
            await self.outbox.complete(item.item_id, {"skipped": "the tool's own ladder runs"})
            return
        now = now_of(self.handler)
        if job not in ("announce", "settle") and not await announced_first(self.outbox, item, now):
            # The announcement is still to be worked out (held by another notifier, or
            # added late): this step comes back a poll later.
            await self.outbox.renew(item.item_id, self.owner, now + self.poll)
            return
        approvers = approvers_of(request)
        router = getattr(self.handler, "router", None)
        if router is not None and job == "escalate":
            # A rotation role moves on to its next member before anyone is added, once for
            # this step however many times it is worked out (a notifier may die before it
            # marks the step done).
            await router.refresh(request, escalating=True, step=item.item_id)
        if job == "escalate":
            added = await self._escalate(item, request, str(item.body.get("to", "manager")))
            approvers = tuple(dict.fromkeys((*approvers, *added)))
        told = approvers
        if router is not None and job != "settle":
            # Those deciding now: delegates for whoever is away, the role's members, the
            # person on call (an escalation's additions are approvers of record too).
            current = await self.handler.get_request(item.pending_id)
            told = await router.recipients(current or request, reaches=self._reached)
            await self._watch_gaps(router, current or request)
        if job == "reassign":
            told = (str(item.body.get("to")),)
        if job == "settle":
            targets = await self._told(item.pending_id)
        else:
            targets = self._targets(told, warn=job == "announce")
        if job == "reassign":
            targets = await self._untold(item, targets)
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

    async def _watch_gaps(self, router: Router, request: PendingInput) -> None:
        """Add a ``gap`` step for each on-call schedule of ``request`` that names nobody
        yet, before the step routing it is marked done (a notifier that dies between the
        two adds it again: its id makes it once)."""
        gaps = await router.unassigned_on_call(request)
        if not gaps:
            return
        now = now_of(self.handler)
        pending_id = request.pending_id
        await self.outbox.add(
            [
                OutboxItem(
                    step_id(pending_id, f"{GAP}.{schedule}"),
                    pending_id,
                    now + GAP_CHECK,
                    {"job": GAP, "schedule": schedule},
                    created=now,
                )
                for schedule in gaps
            ]
        )

    async def _gap(self, item: OutboxItem, request: PendingInput | None) -> None:
        """Work out the ``gap`` step ``item`` of the open ``request`` (``None`` once it is
        not): route it again, so that the person its schedule names now, if any, is
        assigned it and told (once, through the reassignment that adds); the step is done
        then, else it looks again :data:`GAP_CHECK` seconds later."""
        router = getattr(self.handler, "router", None)
        schedule = str(item.body.get("schedule"))
        if request is None or router is None or schedule not in router.of_record(request):
            await self.outbox.complete(item.item_id, {"skipped": "nothing to tell"})
            return
        assigned = await router.refresh(request)
        if schedule in assigned:
            await self.outbox.complete(item.item_id, {"assigned": assigned[schedule]})
            return
        await self.outbox.renew(item.item_id, self.owner, now_of(self.handler) + GAP_CHECK)

    async def _own_ladder(self, pending_id: str) -> bool:
        """Whether the request's tool recorded a ladder of its own (beside a file's)."""
        return any(
            item.body.get("job") in _LADDER and not item.body.get("fallback")
            for item in await self.outbox.items_for(pending_id)
        )

    def _targets(self, approvers: tuple[str, ...], *, warn: bool) -> list[tuple[str, str | None]]:
        targets: list[tuple[str, str | None]] = []
        reached: set[str] = set()
        for name, surface in self.surfaces.items():
            if self._reaches(name, surface, None):
                targets.append((name, None))
                continue
            for actor in approvers:
                if self._reaches(name, surface, actor):
                    targets.append((name, actor))
                    reached.add(actor)
        personal = any(not self._reaches(n, s, None) for n, s in self.surfaces.items())
        for actor in approvers if warn and personal else ():
            if actor not in reached:
                self.stats.unreachable += 1
                logger.warning(
                    "notifier: no surface reaches %r: add Directory({%r: Person(email=...)}) "
                    "or a surface for them",
                    actor,
                    actor,
                )
        return targets

    async def _untold(
        self, item: OutboxItem, targets: list[tuple[str, str | None]]
    ) -> list[tuple[str, str | None]]:
        """The ``targets`` of the reassignment ``item`` that no step worked out since it was
        added told of the request: the escalation that added an on-call schedule assigns its
        person and tells them of the request itself, and a second notice would say it again."""
        since = {
            (str(earlier.body.get("surface")), earlier.body.get("recipient"))
            for earlier in await self.outbox.items_for(item.pending_id)
            if earlier.body.get("job") == "deliver"
            and earlier.body.get("type") != "question_settled"
            and earlier.created >= item.created
            and not earlier.item_id.startswith(f"{item.item_id}.")
        }
        return [target for target in targets if target not in since]

    def _reached(self, actor: str) -> bool:
        """Whether ``actor`` hears of a request: a surface reaches them, or every surface
        tells no one in particular (so nobody is reached by name)."""
        personal = [(n, s) for n, s in self.surfaces.items() if not self._reaches(n, s, None)]
        return not personal or any(self._reaches(n, s, actor) for n, s in personal)

    async def _told(self, pending_id: str) -> list[tuple[str, str | None]]:
        """Who hears how a request ended: every surface that tells no one in particular
        once the request was announced, and each person a notice reached (or is reaching)."""
        told: dict[tuple[str, str | None], None] = {}
        announced = False
        for earlier in await self.outbox.items_for(pending_id):
            body, receipt = earlier.body, earlier.receipt or {}
            announced = announced or earlier.item_id == step_id(pending_id, "announce")
            # In flight counts as told; refused or skipped does not, unless some of it
            # went through first (a device of the person's that showed it), or an attempt
            # cut short may have (it said where it was sending).
            sent = (
                not earlier.done
                or bool(receipt.get("partial"))
                or not ({"failed", "skipped"} & receipt.keys())
            )
            if sent and body.get("job") == "deliver" and body.get("type") != "question_settled":
                told[(str(body["surface"]), body.get("recipient"))] = None
        if announced:
            for name, surface in self.surfaces.items():
                if self._reaches(name, surface, None):
                    told[(name, None)] = None
        return list(told)

    def _reaches(self, name: str, surface: Surface, actor: str | None) -> bool:
        """Whether ``surface`` reaches ``actor`` (everyone, for ``None``). A surface that
        fails to say reaches no one this time: its fault is logged, and never keeps the
        other surfaces' notices back."""
        try:
            person = None if actor is None else self.directory.get(actor)
            return bool(surface.reaches(actor, person))
        except Exception:
            logger.exception(
                "notifier: %s failed to say whether it reaches %r: it is left out", name, actor
            )
            return False

    async def _people(self, request: PendingInput) -> tuple[str, ...]:
        """The people the request's approvers of record stand for now: a role's members or
        the one assigned it, whoever is on call; the approvers themselves without a
        router."""
        current = approvers_of(request)
        router = getattr(self.handler, "router", None)
        if router is None or not router.routes(request):
            return current
        standings = await router.standings(request)
        return tuple(dict.fromkeys(s.actor for s in standings if s.delegation_id is None))

    async def _escalate(self, item: OutboxItem, request: PendingInput, to: str) -> list[str]:
        """Add the approvers the escalation step ``item`` names; those it added already are
        not added again, and never their managers in turn: a step worked out again (its
        notifier stopped before marking it done) adds whom its first run chose."""
        current = approvers_of(request)
        # Read as stored: a run cut short by an outage is tried again with the item claimed.
        stored = await self.outbox.items_for(item.pending_id)
        receipt = next((i.receipt for i in stored if i.item_id == item.item_id), None)
        chosen = (receipt or {}).get(_ESCALATING)
        earlier = [a for a in chosen if isinstance(a, str)] if isinstance(chosen, list) else None
        if earlier is not None:
            wanted = earlier
        elif to == "manager":
            # A role or a schedule has no manager: the people standing for it now have.
            people = [self.directory.get(a) for a in await self._people(request)]
            wanted = [p.manager for p in people if p is not None and p.manager]
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
            # Kept with the step before anyone is added: they are its first run's choice. A
            # lease lost meanwhile leaves the step to the notifier holding it now, which
            # works it out from the request as it stands: adding here would go a level further.
            if earlier is None and not await self.outbox.renew(
                item.item_id, self.owner, item.due, receipt={_ESCALATING: new}
            ):
                return []
            try:
                await add(request.pending_id, new, surface="ladder")
            except ValueError as error:
                # A ladder naming a group the directory lacks: told once, not at every lease.
                logger.warning("notifier: escalate(to=%r) on %s: %s", to, request.pending_id, error)
                return []
        elif new:
            logger.warning(
                "notifier: this handler cannot add approvers: %s is told of %s but cannot "
                "answer it",
                ", ".join(new),
                request.pending_id,
            )
        return new

"""Routing a request by the directory: who decides it now, for whom, and who is told.

A request's approvers are its approvers of record: actor ids, :func:`~roomkit.people.role`
groups and :func:`~roomkit.people.on_call` schedules (a question without approvers has its
actor). The :class:`Router` turns them into the people deciding at one moment, and is asked
again whenever that matters (when the request is made, at every ladder step, when an answer
arrives), because absences and shifts change while a request waits:

- a person who is away (a :class:`~roomkit.people.Delegation` in force covering the tool)
  has their delegate decide on their behalf; they may still decide themselves;
- a role decides through each member (``everyone``) or through the member it was assigned
  to (``rotation``, least recently assigned first, skipping those away);
- an on-call schedule decides through whoever is on call now; when the shift changes, the
  request moves to the new person (the one before keeps read access). A request made while
  the schedule names nobody is assigned to whoever it names next: the notifier keeps a
  ``gap`` step of the request in the outbox, due every minute until someone is on call
  (:mod:`roomkit.notify._steps`), so that no routing of the request is needed for it.

Assignments are kept in the request's history as ``escalated`` entries written by the
``routing`` surface (``group``, ``approvers``, ``replaces``, ``reason``, and ``step``, the
ladder step that handed a rotation on), so every process reading the history routes alike,
and a step worked out again hands a rotation on once. Each is appended only while the
history is as the router read it and the request open (one check-and-set in the store,
:meth:`~roomkit.tools.human_input.HumanInputHandler.record_at`), else the history is read
again: processes routing a request at once record each shift change once, and none records
one after the request's settle. The notice an assignment owes its new person (a shift
change, a member who left, the first person on call) is added to the outbox in that same
write, so that a process killed just after the assignment leaves nobody untold. When each
member of a rotation was last assigned is kept in the store's spend ledger
(``rotation:["<role>","<member>"]``), marked once the assignment's entry is written (a
process killed between the two may give the member a turn again, never skip one), so the
rotation goes on across processes and restarts; two processes assigning the same role in
the same instant may pick the same member.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.people import Directory, reference_of
from roomkit.routing._entries import ROUTING, Reading, assigned_in, assignment_entry
from roomkit.routing._members import Rotations, on_call_now
from roomkit.routing._standing import Standing, told
from roomkit.stores.base import SpendLedger
from roomkit.stores.outbox import OutboxItem, now_of

__all__ = ["ROUTING", "Router"]

logger = logging.getLogger("roomkit.routing")


class RoutedHandler(Protocol):
    """What the router reads and writes through: the handler's history (with the notices
    an assignment owes, added to its outbox) and ledger."""

    async def history(self, pending_id: str) -> list[dict[str, Any]]: ...

    async def record_at(
        self,
        pending_id: str,
        entry: dict[str, Any],
        *,
        seq: int,
        notices: Sequence[OutboxItem] = (),
    ) -> bool: ...

    async def get_request(self, pending_id: str) -> PendingInput | None: ...

    @property
    def ledger(self) -> SpendLedger: ...

    @property
    def durable(self) -> bool: ...


_READINGS = 32
"""Times one refresh reads a request's history again because another write came between
its read and its assignment."""

_HANDED_ON = frozenset({"shift change", "member left"})
"""The reasons of a reassignment the new person is told of through the notifier's outbox."""


class Router:
    """Resolves a request's approvers of record through a :class:`Directory`.

    Args:
        directory: the people, roles and schedules.
        handler: where the request's history is read and written.
        clock: now, timezone-aware; the handler passes its store's clock.
    """

    def __init__(
        self, directory: Directory, handler: RoutedHandler, clock: Callable[[], datetime]
    ) -> None:
        self.directory = directory
        self._handler = handler
        self.clock = clock
        self._rotations = Rotations(handler)
        # One routing of a request at a time in this process: the request's creation and
        # its first notice both route it, and must assign a rotation role once.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @staticmethod
    def of_record(request: PendingInput) -> tuple[str, ...]:
        """The request's approvers of record who may decide it now: its approvers (on a
        quorum, those still to vote), else its actor."""
        if request.approvers:
            return tuple(request.approvers)
        return (request.actor_id,) if request.actor_id else ()

    def routes(self, request: PendingInput) -> bool:
        """Whether the directory changes anything for ``request`` (a group, or someone
        with delegations); a request it does not touch costs no reads."""
        for approver in self.of_record(request):
            if reference_of(approver) is not None:
                return True
            person = self.directory.get(approver)
            if person is not None and person.delegations:
                return True
        return False

    # -- groups ------------------------------------------------------------------------------

    async def assigned(self, request: PendingInput) -> dict[str, str]:
        """Each rotation role and schedule of ``request`` to the member it is assigned to
        now, as its history records."""
        return {group: people[-1] for group, people in (await self._assignments(request)).items()}

    async def _assignments(self, request: PendingInput) -> dict[str, list[str]]:
        """Each rotation role and schedule of ``request`` to everyone it was assigned to,
        oldest first, as its history records."""
        if not any(reference_of(a) for a in self.of_record(request)):
            return {}
        return assigned_in(await self._handler.history(request.pending_id))

    async def unassigned_on_call(self, request: PendingInput) -> tuple[str, ...]:
        """The on-call schedules of ``request``'s approvers of record its history assigns
        to no one yet: it was made, or escalated to them, while they named nobody."""
        schedules = [a for a in self.of_record(request) if _kind(a) == "on_call"]
        if not schedules:
            return ()
        assigned = await self.assigned(request)
        return tuple(schedule for schedule in schedules if schedule not in assigned)

    async def opening(self, request: PendingInput) -> list[dict[str, Any]]:
        """The entries a new request's history starts with: the first assignment of each of
        its on-call schedules and rotation roles. The handler writes them with the request,
        so that every process reads them from the start and none assigns it again."""
        if not self.routes(request):
            return []
        kept: list[dict[str, Any]] = []
        try:
            await self._route(request, Reading({}, frozenset(), 0), escalating=False, kept=kept)
        except BaseException:
            await self.opened(kept, written=False)
            raise
        return kept

    async def opened(self, entries: Sequence[dict[str, Any]], *, written: bool) -> None:
        """Mark the rotation picks of the :meth:`opening` ``entries`` in the ledger once
        they are ``written`` with their request; let go of them when they were not."""
        for entry in entries:
            group, member = str(entry["group"]), entry["approvers"][0]
            if written:
                await self._rotations.assigned(group, member)
            else:
                self._rotations.dropped(group, member)

    async def refresh(
        self, request: PendingInput, *, escalating: bool = False, step: str | None = None
    ) -> dict[str, str]:
        """Bring the request's group assignments up to date and return them: assign what
        has no one yet, follow a shift change, and on ``escalating`` hand each rotation
        role on to its next member. Each change is a history entry, appended only while
        the history is as it was read and the request open: processes refreshing the
        request at once write each change once, and none after its settle.

        Args:
            step: the id of the ladder step escalating (its outbox item's): a rotation
                role it handed on already (a notifier died before marking the step done,
                and another works it out again) is not handed on again.
        """
        lock = self._locks.get(request.pending_id)
        if lock is None:
            lock = self._locks[request.pending_id] = asyncio.Lock()
        async with lock:
            return await self._refresh(request, escalating, step)

    async def _refresh(
        self, request: PendingInput, escalating: bool, step: str | None
    ) -> dict[str, str]:
        if not any(reference_of(a) for a in self.of_record(request)):
            return {}
        picked: dict[tuple[str, str | None], str | None] = {}
        try:
            return await self._refreshing(request, escalating, step, picked)
        finally:
            # The picks no written assignment led to are let go of.
            for (approver, _), chosen in picked.items():
                if chosen is not None:
                    self._rotations.dropped(approver, chosen)

    async def _refreshing(
        self,
        request: PendingInput,
        escalating: bool,
        step: str | None,
        picked: dict[tuple[str, str | None], str | None],
    ) -> dict[str, str]:
        for _ in range(_READINGS):
            reading = Reading.of(await self._handler.history(request.pending_id), step)
            routed = await self._route(
                request, reading, escalating=escalating, picked=picked, step=step
            )
            if routed is not None:
                return routed
            # Another write came between the read and the assignment: read again, unless
            # it was the settle, after which the request is read as it was left.
            now = await self._handler.get_request(request.pending_id)
            if now is None or now.status is not PendingInputStatus.PENDING:
                return await self.assigned(request)
        logger.warning(
            "routing: the history of %s kept growing while it was routed (%d reads); its "
            "assignments stand as read, and the next routing of it brings them up to date",
            request.pending_id,
            _READINGS,
        )
        return await self.assigned(request)

    async def _route(
        self,
        request: PendingInput,
        reading: Reading,
        *,
        escalating: bool,
        kept: list[dict[str, Any]] | None = None,
        picked: dict[tuple[str, str | None], str | None] | None = None,
        step: str | None = None,
    ) -> dict[str, str] | None:
        """Assign each group of ``request`` whose assignment ``reading`` finds out of date:
        in ``kept`` for a request not stored yet, else in its history, each entry as the
        entry after the last one read; the assignments, or ``None`` when another write came
        first (nothing more is written then)."""
        every = reading.every
        current = {group: people[-1] for group, people in every.items()}
        seq = reading.length
        for approver in self.of_record(request):
            before = current.get(approver)
            handing_on = escalating and approver not in reading.handed
            change = await self._change(
                request, approver, before, every.get(approver, ()), handing_on, kept, picked
            )
            if change is None:
                continue
            actor, reason = change
            by = step if handing_on else None
            entry = assignment_entry(self.clock(), approver, actor, before, reason, by)
            if kept is not None:
                kept.append(entry)
            else:
                notices = self._notices(request, entry, len(every.get(approver, ())))
                if not await self._handler.record_at(
                    request.pending_id, entry, seq=seq, notices=notices
                ):
                    return None
                seq += 1
                if picked is not None and picked.pop((approver, before), None) == actor:
                    await self._rotations.assigned(approver, actor)
            current[approver] = actor
        return current

    async def _change(
        self,
        request: PendingInput,
        approver: str,
        before: str | None,
        assigned: Sequence[str],
        handing_on: bool,
        kept: list[dict[str, Any]] | None,
        picked: dict[tuple[str, str | None], str | None] | None,
    ) -> tuple[str, str] | None:
        """Who ``approver`` (a group assigned ``assigned``, ``before`` now) goes to now, and
        why; ``None`` when it stays as it is. ``picked`` keeps a rotation's pick for the
        reads of the history one refresh makes again."""
        reference = reference_of(approver)
        if reference is None:
            return None
        kind, name = reference
        if kind == "on_call":
            now = await on_call_now(self.directory, name, self.clock())
            if now is None and before is None and kept is not None:
                logger.warning(
                    "routing: the on-call schedule %r names nobody now: request %s is "
                    "told to no one until a shift names someone, who is assigned it and "
                    "told then (a running notifier looks every minute); check the "
                    "schedule has no gap",
                    name,
                    request.pending_id,
                )
            if now is None or now == before:
                return None
            return now, "on call" if before is None else "shift change"
        group = self.directory.roles.get(name)
        if group is None or group.rule != "rotation":
            return None
        left = before is not None and before not in group.members
        if not (before is None or handing_on or left):
            return None
        key = (approver, before)
        if picked is None or key not in picked:
            # Handed on because the member left, a request goes to someone it never went
            # to: processes whose directories disagree for a while (a rolling restart)
            # hand it on a bounded number of times, never back and forth.
            skip = assigned if left and not handing_on else ()
            chosen = await self._rotations.next_member(
                self.directory, name, self.clock(), before, request.tool_name, skip
            )
            if picked is not None:
                picked[key] = chosen
        else:
            chosen = picked[key]
        if chosen is None or chosen == before:
            return None
        return chosen, "rotation" if before is None else "member left" if left else "escalation"

    def _notices(self, request: PendingInput, entry: dict[str, Any], turn: int) -> list[OutboxItem]:
        """The notice owed to the person the assignment ``entry`` (the group's ``turn``-th)
        hands the request on to, when it is one they hear of through the outbox: recorded
        with the entry, in the same write, so that a process dying after the entry leaves
        no one untold."""
        reason, actor = entry["reason"], entry["approvers"][0]
        if not (("replaces" in entry and reason in _HANDED_ON) or reason == "on call"):
            return []
        # The new person hears of the request through the notifier's outbox, once: a desk
        # and a notifier seeing the same change add the same item. So does the first
        # person on call of a request made while nobody was: nobody was told.
        now = now_of(self._handler)
        return [
            OutboxItem(
                f"{request.pending_id}.reassign.{turn}.{actor}",
                request.pending_id,
                now,
                {"job": "reassign", "to": actor},
                created=now,
            )
        ]

    # -- who decides -------------------------------------------------------------------------

    async def standings(self, request: PendingInput) -> list[Standing]:
        """Everyone who may decide ``request`` now, each with the approver they count for,
        the approvers of record first."""
        assigned: dict[str, str] = {}
        if self.routes(request):
            # Only an open request is moved; a settled one is read as it was left.
            open_ = request.status is PendingInputStatus.PENDING
            assigned = await (self.refresh(request) if open_ else self.assigned(request))
        at = self.clock()
        tool = request.tool_name if request.kind == "approval" else None
        found: list[Standing] = []
        for approver in self.of_record(request):
            for person in self._people_of(approver, assigned):
                group = None if person == approver else approver
                found.append(Standing(person, approver, None, group))
                for stand_in in self.directory.stand_ins(person, at, tool):
                    found.append(Standing(stand_in.actor, approver, stand_in.delegation_id, person))
        return found

    def _people_of(self, approver: str, assigned: dict[str, str]) -> list[str]:
        reference = reference_of(approver)
        if reference is None:
            return [approver]
        kind, name = reference
        group = self.directory.roles.get(name) if kind == "role" else None
        if approver in assigned:
            person = assigned[approver]
            # A member who left the role (the directory changed) no longer decides for it.
            return [person] if kind != "role" or (group and person in group.members) else []
        return list(group.members) if group is not None and group.rule == "everyone" else []

    async def standing(self, request: PendingInput, actor: str) -> list[Standing]:
        """What ``actor`` may decide ``request`` as: themself first, then each approver
        they stand in for; empty when they may not decide it."""
        mine = [s for s in await self.standings(request) if s.actor == actor]
        mine.sort(key=lambda s: s.delegation_id is not None)
        first: dict[str, Standing] = {}
        for found in mine:
            first.setdefault(found.principal, found)
        return list(first.values())

    async def may_decide(self, request: PendingInput, actor: str) -> bool:
        """Whether ``actor`` may decide ``request`` now."""
        return bool(await self.standing(request, actor))

    async def may_see(self, request: PendingInput, actor: str) -> bool:
        """Whether ``actor`` may see ``request``: they may decide it, or it was assigned to
        them before (the person of a shift that ended keeps read access)."""
        if await self.may_decide(request, actor):
            return True
        if not any(reference_of(a) for a in self.of_record(request)):
            return False
        for entry in await self._handler.history(request.pending_id):
            if entry.get("surface") == ROUTING and actor in (entry.get("approvers") or []):
                return True
        return False

    async def recipients(
        self, request: PendingInput, *, reaches: Callable[[str], bool] | None = None
    ) -> tuple[str, ...]:
        """Who is told of ``request`` now: for each approver of record, the one deciding
        (the last delegate of a chain in force, else the person).

        Args:
            reaches: whether some surface reaches an actor. Given, a delegate it does not
                reach is passed over for the one before them in the chain, down to the
                person away: a delegation to someone nobody can tell (a misspelt name)
                never leaves the request unheard of.
        """
        return told(request.pending_id, await self.standings(request), reaches)

    async def status(self, request: PendingInput) -> str | None:
        """What the one who asked reads: ``Alice is away until 12 Dec; Carol is
        deciding``; ``None`` when nobody of record is away."""
        if not self.routes(request):
            return None
        at = self.clock()
        tool = request.tool_name if request.kind == "approval" else None
        assigned = await self.assigned(request)
        parts: list[str] = []
        for approver in self.of_record(request):
            for person in self._people_of(approver, assigned):
                chain = self.directory.stand_ins(person, at, tool)
                if chain:
                    until = chain[0].until
                    parts.append(
                        f"{_name(person)} is away until {until.day} {until:%b}; "
                        f"{_name(chain[-1].actor)} is deciding"
                    )
        return "; ".join(parts) or None


def _kind(approver: str) -> str | None:
    """Whether ``approver`` names a ``"role"`` or an ``"on_call"`` schedule; ``None`` for
    an actor."""
    reference = reference_of(approver)
    return None if reference is None else reference[0]


def _name(actor: str) -> str:
    """An actor id as a sentence shows a person: ``alice`` reads ``Alice``."""
    return actor[:1].upper() + actor[1:]

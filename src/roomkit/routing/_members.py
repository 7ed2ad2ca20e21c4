"""Who a group of approvers goes to next: a rotation role's member assigned least recently,
an on-call schedule's person now.

When each member of a rotation was last assigned is kept in the store's spend ledger
(``rotation:["<role>","<member>"]``), so the rotation goes on across processes and
restarts; this process's own turns break a tie of the ledger's clock. A pick is marked in
the ledger only once its assignment is written (:meth:`Rotations.assigned`): a process
killed between the two leaves the member unmarked, to be picked again, never marked for a
request they never got. Until then this process holds the pick, so that its other picks of
the role pass the member by.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from roomkit.auth.names import RULE, actor_name_problem
from roomkit.people import Directory, reference_of
from roomkit.stores.base import SpendLedger

__all__ = ["Rotations", "on_call_now"]

logger = logging.getLogger("roomkit.routing")

LOOKUP = 30.0
"""Seconds a schedule's lookup may take before the routing goes on without it (whoever was
assigned stays): a source of one's own that never answers must not hold the request's routing."""


class HasLedger(Protocol):
    """Where the rotations' last assignments are kept: the handler's spend ledger."""

    @property
    def ledger(self) -> SpendLedger: ...


class Rotations:
    """Picks the member a rotation role goes to; the picks written are kept in the spend
    ledger.

    Args:
        handler: whose spend ledger keeps when each rotation member was last assigned.
    """

    def __init__(self, handler: HasLedger) -> None:
        self._handler = handler
        # This process's turns, per role and member: they order assignments the ledger's
        # clock made in the same instant.
        self._last_assigned: dict[tuple[str, str], int] = {}
        self._turns = 0
        # One pick per role at a time in this process: read the ledger, then hold the pick.
        self._picking: dict[str, asyncio.Lock] = {}
        # The picks whose assignment is not written yet, per role and member.
        self._held: Counter[tuple[str, str]] = Counter()

    async def next_member(
        self,
        directory: Directory,
        name: str,
        at: datetime,
        after: str | None,
        tool: str | None,
        skip: Collection[str] = (),
    ) -> str | None:
        """The member of ``directory``'s role ``name`` assigned least recently (by any
        process on the store), skipping those away at ``at``, ``after`` and ``skip``. The
        pick is held until its assignment is written (:meth:`assigned`) or dropped
        (:meth:`dropped`)."""
        group = directory.roles.get(name)
        if group is None:
            return None
        members = [member for member in group.members if member != after and member not in skip]
        present = [member for member in members if directory.away(member, at, tool) is None]
        nobody_in = all(directory.away(m, at, tool) is not None for m in group.members)
        if not present and members and nobody_in:
            # Someone is assigned all the same: their delegates decide, and the desk says
            # who is away until when, where no one at all would leave the request unseen.
            logger.warning(
                "routing: every member of role %r is away; the one assigned least recently "
                "is assigned, and their delegates decide",
                name,
            )
            present = members
        if not present:
            return None
        lock = self._picking.setdefault(name, asyncio.Lock())
        async with lock:
            ledger = self._handler.ledger
            entries = {member: _rotation_entry(name, member) for member in present}
            last = await ledger.read_spent(list(entries.values()))

            def order(member: str) -> tuple[bool, float, int]:
                # Never assigned first; then the oldest assignment; a pick this process
                # holds counts as the newest; this process's turns break a tie of the
                # ledger's clock.
                when = last.get(entries[member], float("-inf"))
                held = self._held[(name, member)] > 0
                return held, when, self._last_assigned.get((name, member), -1)

            chosen = min(present, key=order)
            self._held[(name, chosen)] += 1
            self._turns += 1
            self._last_assigned[(name, chosen)] = self._turns
        return chosen

    async def assigned(self, group: str, member: str) -> None:
        """Mark in the ledger that ``member`` of ``group`` (a rotation role's approver,
        ``role:<name>``; any other group is passed over) was assigned now, once the
        assignment a pick of :meth:`next_member` led to is written. A mark that cannot be
        written is logged: the assignment stands, and the member may come round again
        sooner."""
        name = _role_name(group)
        if name is None:
            return
        try:
            await self._handler.ledger.record_spent(_rotation_entry(name, member), until=None)
        except Exception as error:
            logger.warning(
                "routing: could not mark %r of role %r as assigned in the ledger (%s); "
                "the rotation may give them the next request too",
                member,
                name,
                error,
            )
        finally:
            self.dropped(group, member)

    def dropped(self, group: str, member: str) -> None:
        """Let go of a pick of :meth:`next_member` (``member`` of ``group``, as
        :meth:`assigned` takes them) whose assignment was not written."""
        name = _role_name(group)
        if name is None:
            return
        key = (name, member)
        if self._held[key] > 0:
            self._held[key] -= 1
        if self._held[key] <= 0:
            self._held.pop(key, None)


async def on_call_now(directory: Directory, name: str, at: datetime) -> str | None:
    """The actor ``directory``'s schedule ``name`` has on call at ``at``; ``None`` when
    that cannot be told (no such schedule, a read that failed or took longer than
    :data:`LOOKUP`, a shift naming no one who could sign in), so that whoever was assigned
    stays."""
    source = directory.on_call.get(name)
    if source is None:
        logger.warning("routing: the directory has no on-call schedule %r", name)
        return None
    bound = asyncio.timeout(LOOKUP)
    try:
        async with bound:
            who = await source.on_call_at(at)
    except Exception as error:
        # A schedule that cannot be read now keeps whoever was assigned.
        if isinstance(error, TimeoutError) and bound.expired():
            error = TimeoutError(f"it did not answer within {LOOKUP:g} s")
        logger.warning("routing: could not read the on-call schedule %r (%s)", name, error)
        return None
    if who is None:
        return None
    problem = actor_name_problem(who)
    if problem is not None:
        # No one could sign in as it: assigned, the request would wait on nobody.
        logger.warning(
            "routing: the on-call schedule %r names someone who %s (%s); whoever was "
            "assigned before stays: fix the shift to name a person's email or actor id",
            name,
            problem,
            RULE,
        )
        return None
    assert isinstance(who, str)
    return directory.actor_for_email(who) or who


def _role_name(group: str) -> str | None:
    """The name of the role ``group`` names; ``None`` when it names no role."""
    reference = reference_of(group)
    return reference[1] if reference is not None and reference[0] == "role" else None


def _rotation_entry(role: str, member: str) -> str:
    """The ledger's entry keeping when ``member`` of ``role`` was last assigned (a digest
    when the names are too long for an entry)."""
    entry = "rotation:" + json.dumps([role, member], ensure_ascii=False, separators=(",", ":"))
    if len(entry) <= 512:
        return entry
    return "rotation:" + hashlib.sha256(entry.encode()).hexdigest()

"""The directory: actor ids to :class:`Person` entries, the roles, the on-call schedules.

It is checked whole when it is built: every name is an actor name (a role's and a
schedule's too), no one's managers lead back to them, and at no moment do the delegations
in force make a cycle (Alice to Bob to Alice) or a chain longer than ``max_chain`` links.
Whether a delegation holds is asked with a moment: the directory has no clock of its own,
the handler routing a request passes its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from roomkit.auth.names import RULE, actor_name_problem
from roomkit.models.shown import shown
from roomkit.people._chains import check_chains
from roomkit.people._entries import (
    ON_CALL_PREFIX,
    ROLE_PREFIX,
    Delegation,
    OnCallSource,
    Person,
    Role,
    group_name_problem,
    reference_of,
)

__all__ = ["MAX_CHAIN", "Directory", "StandIn"]

logger = logging.getLogger("roomkit.people")

MAX_CHAIN = 3
"""The most delegations one request may pass through (Alice to Bob to Carol is two)."""


@dataclass(frozen=True, slots=True)
class StandIn:
    """Someone deciding in an approver's place through a delegation (or a chain of them)."""

    actor: str
    """The delegate."""
    on_behalf_of: str
    """The approver of record."""
    delegation_id: str
    """The id of the approver's own delegation, which the chain starts from."""
    until: datetime
    """When the chain stops holding (the earliest end of its links)."""
    chain: tuple[str, ...]
    """Everyone it passes through after the approver, the delegate last."""


def _check_name(value: object, what: str) -> None:
    problem = actor_name_problem(value)
    if problem is not None:
        raise ValueError(f"Directory: {what} {shown(value, limit=40)} {problem}: {RULE}")


class Directory:
    """Actor ids to :class:`Person` entries; an actor not listed has no contact point.

    Each actor id, each entry's ``manager``, each delegate and each role member is an actor
    name (:mod:`roomkit.auth.names`): the same rule the desk's tokens follow.

    Args:
        people: actor ids to their entries.
        roles: role names to :class:`Role` groups (``role("kyc")`` approvers).
        on_call: schedule names to their sources (``on_call("payments")`` approvers), such
            as :class:`~roomkit.routing.ICalOnCall` or :class:`~roomkit.routing.PagerDutyOnCall`.
        max_chain: the most delegations a request passes through.

    Raises:
        ValueError: a name is not an actor name; a role or schedule has no name, or one
            that is no actor name or too long for its approver (``role:NAME`` or
            ``on-call:NAME``, at most 256 characters); someone is their own manager, or the
            managers make a cycle; someone delegates to themselves or to a group (a
            ``role:`` or ``on-call:`` name); the delegations in force
            at some moment make a cycle or a chain longer than ``max_chain``.
        TypeError: an entry is not a :class:`Person`, a role not a :class:`Role`, a
            schedule not an :class:`OnCallSource`.
    """

    __slots__ = ("_by_email", "_by_slack", "_people", "max_chain", "on_call", "roles")

    def __init__(
        self,
        people: Mapping[str, Person] | None = None,
        *,
        roles: Mapping[str, Role] | None = None,
        on_call: Mapping[str, OnCallSource] | None = None,
        max_chain: int = MAX_CHAIN,
    ) -> None:
        self._people = dict(people or {})
        self.roles: dict[str, Role] = dict(roles or {})
        self.on_call: dict[str, OnCallSource] = dict(on_call or {})
        if isinstance(max_chain, bool) or not isinstance(max_chain, int) or max_chain < 1:
            raise ValueError(f"Directory(max_chain=...) is a count of 1 or more, got {max_chain!r}")
        self.max_chain = max_chain
        for actor, person in self._people.items():
            _check_name(actor, "the actor id")
            if not isinstance(person, Person):
                raise TypeError(f"Directory: {actor!r} must map to a Person, not {person!r}")
            if person.manager is not None:
                _check_name(person.manager, f"{actor!r}'s manager")
            for delegation in person.delegations:
                _check_name(delegation.to, f"{actor!r}'s delegate")
                if delegation.to == actor:
                    raise ValueError(f"Directory: {actor!r} delegates to themselves")
                if reference_of(delegation.to) is not None:
                    # Routed as a person's id, it would reach no member: nobody would decide.
                    raise ValueError(
                        f"Directory: {actor!r} delegates to {shown(delegation.to, limit=40)}, "
                        "a group: a delegation goes to one person, so name one of its members "
                        "(a request's approvers may name the group)"
                    )
        for actor, person in self._people.items():
            for delegation in person.delegations:
                if delegation.to not in self._people:
                    # A misspelt or lookalike name would take the person's requests to
                    # nobody anyone knows; the notifier tells the person while no surface
                    # reaches the delegate, and this says why.
                    logger.warning(
                        "Directory: %s delegates to %s from %s to %s, who is not in the "
                        "directory (no contact point): check the name, or list them with "
                        "Person(...)",
                        ascii(actor),
                        ascii(delegation.to),
                        delegation.starts.isoformat(),
                        delegation.ends.isoformat(),
                    )
        groups = (
            ("role", ROLE_PREFIX, self.roles),
            ("on-call schedule", ON_CALL_PREFIX, self.on_call),
        )
        for kind, prefix, names in groups:
            for name in names:
                if not isinstance(name, str) or not name.strip():
                    raise ValueError(
                        f"Directory: a {kind} is named by text, not {shown(name, limit=40)}"
                    )
                problem = group_name_problem(prefix, name)
                if problem is not None:
                    # The name travels in approvers (role:NAME), logs and history entries.
                    raise ValueError(
                        f"Directory: the {kind} name {shown(name, limit=40)} {problem}: a "
                        f"{kind} is named as an actor is ({RULE})"
                    )
        for name, group in self.roles.items():
            if not isinstance(group, Role):
                raise TypeError(f"Directory: role {name!r} must be a Role, not {group!r}")
            for member in group.members:
                _check_name(member, f"role {name!r}'s member")
        for name, source in self.on_call.items():
            if not isinstance(source, OnCallSource):
                raise TypeError(
                    f"Directory: on-call schedule {name!r} must have on_call_at(at), got {source!r}"
                )
        self._check_managers()
        check_chains(self._people, self.max_chain)
        self._by_slack = {p.slack_user: a for a, p in self._people.items() if p.slack_user}
        self._by_email = {p.email.lower(): a for a, p in self._people.items() if p.email}

    def _check_managers(self) -> None:
        """Refuse managers that lead back to where they started (Alice's is Bob, Bob's is
        Alice), or a person who is their own: an escalation along them reaches no one new,
        and would tell the approvers it was escalated. Each person has one manager, so one
        walk from each person, stopping at anyone walked already, finds every cycle."""
        walked: set[str] = set()
        for start in self._people:
            path: list[str] = []
            actor: str | None = start
            while actor is not None and actor not in walked and actor not in path:
                path.append(actor)
                person = self._people.get(actor)
                actor = person.manager if person is not None else None
            if actor is not None and actor in path:
                if path[-1] == actor:
                    raise ValueError(
                        f"Directory: {actor!r} is their own manager: leave manager out, or "
                        "name the person an escalation should reach"
                    )
                cycle = " -> ".join((*path[path.index(actor) :], actor))
                raise ValueError(
                    f"Directory: the managers make a cycle ({cycle}): name someone outside "
                    "it as one of their managers, or leave one out"
                )
            walked.update(path)

    def routes_anything(self) -> bool:
        """Whether it changes who decides a request: a delegation, a role or a schedule."""
        delegates = any(person.delegations for person in self._people.values())
        return delegates or bool(self.roles) or bool(self.on_call)

    def get(self, actor_id: str) -> Person | None:
        """The entry for ``actor_id``, or ``None``."""
        return self._people.get(actor_id)

    def actor_for_slack_user(self, slack_user: str) -> str | None:
        """The actor whose entry names this Slack user id, or ``None``."""
        return self._by_slack.get(slack_user)

    def actor_for_email(self, email: str) -> str | None:
        """The actor whose entry has this email address (any case), or ``None``."""
        return self._by_email.get(email.lower())

    def away(self, actor_id: str, at: datetime, tool: str | None = None) -> Delegation | None:
        """The delegation ``actor_id`` has in force at ``at`` covering ``tool`` (with
        ``tool=None``, any delegation in force), the first they list of several, or ``None``
        when they are not away."""
        person = self._people.get(actor_id)
        for delegation in person.delegations if person is not None else ():
            if delegation.holds(at) and (tool is None or delegation.covers(tool)):
                return delegation
        return None

    def stand_ins(self, actor_id: str, at: datetime, tool: str | None) -> list[StandIn]:
        """Who decides in ``actor_id``'s place at ``at`` for a request of ``tool``: each
        delegate along the chain in force, the last one deciding.

        Each link covers the tool, or the chain stops before it: a delegation never widens
        what the one before it handed on.
        """
        first = self.away(actor_id, at, tool) if tool is not None else self._any(actor_id, at)
        if first is None:
            return []
        found: list[StandIn] = []
        ident = first.ident(actor_id)
        link: Delegation | None = first
        chain: tuple[str, ...] = ()
        passed: set[str] = set()  # the chain's names, looked up without reading them all
        until = first.ends
        while link is not None and len(chain) < self.max_chain and link.to not in passed:
            chain = (*chain, link.to)
            passed.add(link.to)
            until = min(until, link.ends)
            found.append(StandIn(link.to, actor_id, ident, until, chain))
            link = self.away(link.to, at, tool) if tool is not None else self._any(link.to, at)
            if link is not None and (link.to == actor_id):
                break
        return found

    def _any(self, actor_id: str, at: datetime) -> Delegation | None:
        """A delegation in force for a request with no tool (a question): one for every tool."""
        person = self._people.get(actor_id)
        for delegation in person.delegations if person is not None else ():
            if delegation.holds(at) and delegation.tools is None:
                return delegation
        return None

    def __contains__(self, actor_id: object) -> bool:
        return actor_id in self._people

    def __len__(self) -> int:
        return len(self._people)

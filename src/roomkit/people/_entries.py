"""What the directory lists: people, their delegations while they are away, and groups.

A :class:`Person` says how to reach one actor, who their manager is, and to whom their
requests go while they are away (:class:`Delegation`). An approver is an actor id, or a
reference to a group the directory resolves when a request is routed: :func:`role` (a
:class:`Role`'s members) or :func:`on_call` (whoever a schedule says is on call).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol, runtime_checkable

from roomkit.auth.names import MAX_ACTOR_CHARS, actor_name_problem

__all__ = [
    "ON_CALL_PREFIX",
    "ROLE_PREFIX",
    "Delegation",
    "OnCallSource",
    "Person",
    "Role",
    "group_name_problem",
    "on_call",
    "reference_of",
    "role",
]

ROLE_PREFIX = "role:"
"""How an approver names a role of the directory: ``role:kyc``."""
ON_CALL_PREFIX = "on-call:"
"""How an approver names an on-call schedule of the directory: ``on-call:payments``."""


def role(name: str) -> str:
    """The approver that stands for the directory's role ``name`` (``"role:kyc"``).

    Raises:
        ValueError: ``name`` is empty, not text, holds a control character, or is longer
            than an approver may be with its prefix (251 characters).
    """
    return ROLE_PREFIX + _group_name("role", ROLE_PREFIX, name)


def on_call(name: str) -> str:
    """The approver that stands for whoever the schedule ``name`` has on call
    (``"on-call:payments"``).

    Raises:
        ValueError: ``name`` is empty, not text, holds a control character, or is longer
            than an approver may be with its prefix (248 characters).
    """
    return ON_CALL_PREFIX + _group_name("on_call", ON_CALL_PREFIX, name)


def reference_of(approver: str) -> tuple[Literal["role", "on_call"], str] | None:
    """``("role", "kyc")`` for ``role:kyc``, ``("on_call", "payments")`` for
    ``on-call:payments``; ``None`` for a plain actor id."""
    if approver.startswith(ROLE_PREFIX):
        return "role", approver[len(ROLE_PREFIX) :]
    if approver.startswith(ON_CALL_PREFIX):
        return "on_call", approver[len(ON_CALL_PREFIX) :]
    return None


def group_name_problem(prefix: str, name: object) -> str | None:
    """What makes ``name`` no name for a group its approvers name with ``prefix``, or
    ``None`` when it is one: it must be an actor name, and so must ``prefix + name``, which
    the group's approver is (an approver is kept as an actor id is, at most 256
    characters)."""
    problem = actor_name_problem(name)
    if problem is None and isinstance(name, str) and len(prefix + name) > MAX_ACTOR_CHARS:
        problem = (
            f"is {len(name)} characters long: with {prefix!r} before it, the approver naming "
            f"it would be longer than the {MAX_ACTOR_CHARS} characters an actor id may have"
        )
    return problem


def _group_name(kind: str, prefix: str, name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{kind}() takes the group's name, as in the directory, got {name!r}")
    problem = group_name_problem(prefix, name)
    if problem is not None:
        raise ValueError(
            f"{kind}() takes the group's name, as in the directory: {repr(name)[:40]} {problem}"
        )
    return name


@dataclass(frozen=True, slots=True)
class Delegation:
    """While ``starts <= now < ends``, ``to`` decides in place of the person listing it.

    Args:
        to: the delegate's actor id.
        starts: when it begins (timezone-aware).
        ends: when it ends (timezone-aware; the first moment it no longer holds).
        tools: the tools it covers (at least one); ``None`` for every tool. A chain of
            delegations covers only what every link covers: a delegation never widens what
            was handed on.
        reason: why (``"on holiday"``), for whoever reads the directory; a decision made
            through it names it in the request's history by its id (``delegation_id``).
    """

    to: str
    starts: datetime
    ends: datetime
    tools: frozenset[str] | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.tools is not None and not isinstance(self.tools, frozenset):
            if isinstance(self.tools, str):
                raise TypeError(
                    f"Delegation(tools=...) is a set of tool names: pass {{{self.tools!r}}}"
                )
            object.__setattr__(self, "tools", frozenset(self.tools))
        if self.tools is not None and not all(isinstance(t, str) and t for t in self.tools):
            # A name of another type, or an empty one, is no tool's: the delegation would
            # silently cover none of the calls it names.
            odd = next(t for t in self.tools if not isinstance(t, str) or not t)
            raise TypeError(f"Delegation(tools=...) holds tool names (non-empty text), got {odd!r}")
        if self.tools is not None and not self.tools:
            raise ValueError(
                f"Delegation to {self.to!r} names no tool: leave tools out (None) for every tool"
            )
        for name in ("starts", "ends"):
            moment = getattr(self, name)
            if not isinstance(moment, datetime) or _offset(moment) is None:
                raise ValueError(
                    f"Delegation({name}=...) must be a timezone-aware datetime, got {moment!r}: "
                    "pass datetime(..., tzinfo=UTC) or a zoneinfo.ZoneInfo"
                )
        # Compared as instants: two times of one zone compare by their clock reading, so the
        # hour a clock repeats (01:30 EDT, then 01:30 EST) would look like no time at all.
        if self.ends.astimezone(UTC) <= self.starts.astimezone(UTC):
            raise ValueError(
                f"Delegation to {self.to!r} ends ({self.ends.isoformat()}) before it starts "
                f"({self.starts.isoformat()})"
            )

    def holds(self, at: datetime) -> bool:
        """Whether it is in force at ``at``.

        Raises:
            TypeError: ``at`` is a naive datetime, which names no instant.
        """
        if not isinstance(at, datetime) or _offset(at) is None:
            # Read as this machine's local time it would name another moment on each host.
            raise TypeError(
                f"Delegation.holds() takes a timezone-aware datetime, got {at!r}: pass "
                "datetime(..., tzinfo=UTC) or datetime.now(UTC)"
            )
        return self.starts.astimezone(UTC) <= at.astimezone(UTC) < self.ends.astimezone(UTC)

    def covers(self, tool: str | None) -> bool:
        """Whether it covers ``tool`` (``None``: any request, as a question's)."""
        return self.tools is None or (tool is not None and tool in self.tools)

    def ident(self, delegator: str) -> str:
        """Its id in histories: stable for the same delegator, delegate and time span."""
        text = f"{delegator}\x00{self.to}\x00{self.starts.isoformat()}\x00{self.ends.isoformat()}"
        return "dlg_" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _offset(moment: datetime) -> timedelta | None:
    """``moment``'s offset from UTC; ``None`` when its timezone gives none (a tzinfo of
    one's own without the data), which leaves it as naive as one without a timezone: it
    could be compared with no moment a request is routed at."""
    try:
        return moment.utcoffset()
    except Exception:
        return None


@dataclass(frozen=True, slots=True)
class Person:
    """How to reach one actor, and who decides for them while they are away.

    Every field is optional.
    """

    email: str | None = None
    slack_user: str | None = None
    """The Slack user id (``U012AB3CD``), for a direct message and to map clicks back."""
    manager: str | None = None
    """The actor id an ``escalate(to="manager")`` step adds."""
    delegations: tuple[Delegation, ...] = field(default=())
    """Who decides in this person's place, and when (:class:`Delegation`). Of those in force
    at once, the first listed that covers a request's tool decides it."""

    def __post_init__(self) -> None:
        if isinstance(self.delegations, Delegation):
            raise TypeError(
                "Person(delegations=...) is a list of Delegation(...): pass [Delegation(...)]"
            )
        if not isinstance(self.delegations, tuple):
            object.__setattr__(self, "delegations", tuple(self.delegations))
        for delegation in self.delegations:
            if not isinstance(delegation, Delegation):
                raise TypeError(
                    f"Person(delegations=...) holds Delegation(...), got {delegation!r}"
                )


@dataclass(frozen=True, slots=True)
class Role:
    """A group of actors that may be an approver (:func:`role`).

    Args:
        members: the members' actor ids (a name given twice counts once).
        rule: ``"everyone"``: each member may answer (the first answer wins);
            ``"rotation"``: one member is picked, the one assigned least recently, skipping
            those who are away; a ladder's escalation hands it to the next.
    """

    members: tuple[str, ...]
    rule: Literal["everyone", "rotation"] = "everyone"

    def __post_init__(self) -> None:
        if isinstance(self.members, str):
            raise TypeError(f"Role(members=...) is a list of actor ids: pass [{self.members!r}]")
        # A name given twice is one member, however the names are given (a tuple, a list,
        # the TOML file's): told once, and one turn in a rotation.
        object.__setattr__(self, "members", actor_names(self.members))
        if not self.members:
            raise ValueError("Role(members=...) names at least one actor")
        if self.rule not in ("everyone", "rotation"):
            raise ValueError(f"Role(rule=...) is 'everyone' or 'rotation', got {self.rule!r}")


@runtime_checkable
class OnCallSource(Protocol):
    """A schedule saying who is on call (an iCal feed, PagerDuty, ...)."""

    async def on_call_at(self, at: datetime) -> str | None:
        """The person on call at ``at``: an actor id or an email address the directory
        lists; ``None`` when nobody is."""
        ...


def actor_names(values: Iterable[str]) -> tuple[str, ...]:
    """``values`` without repeats, in order."""
    return tuple(dict.fromkeys(values))

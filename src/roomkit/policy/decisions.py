"""What a policy is asked about and what it may answer.

A :class:`Policy` is anything with ``decide(call)``, plain or async, taking a
:class:`PolicyCall` (the tool, the final arguments and their digest, the actor, the room and
the channel) and returning one of four decisions: :class:`Allow` (run it, nobody is asked),
:class:`Deny` (refuse it; the model reads the reason), :class:`Ask` (hold it for a person,
with the approvers, quorum and timeout it names, else the static rule's) or
:class:`Abstain` (no opinion: the tool's static ``Approval`` rule, or none, stays in charge).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from roomkit.auth.names import RULE, actor_name_problem
from roomkit.models.clock import check_deadline

__all__ = [
    "Abstain",
    "Allow",
    "Ask",
    "Deny",
    "Policy",
    "PolicyCall",
    "PolicyDecision",
    "decision_name",
]


@dataclass(frozen=True, slots=True)
class PolicyCall:
    """One tool call as a policy sees it: after BEFORE_TOOL_USE, on the final arguments."""

    tool: str
    """The tool's name."""
    arguments: Mapping[str, Any]
    """The arguments the call would run with (a copy: changing it changes nothing)."""
    digest: str
    """The digest bound to those arguments (``arguments_digest(tool, arguments)``)."""
    actor: str | None = None
    """Whom the call is for, or ``None`` when nobody is known."""
    room: str | None = None
    """The call's room id."""
    channel: str | None = None
    """The channel serving the call."""

    def to_input(self) -> dict[str, Any]:
        """The call as a JSON object (what Rego and OPA read as ``input``)."""
        return {
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "digest": self.digest,
            "actor": self.actor,
            "room": self.room,
            "channel": self.channel,
        }


@dataclass(frozen=True, slots=True)
class Allow:
    """Run the call without asking anyone."""

    reason: str = ""
    """Why (kept in the history)."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call; the model reads ``reason``."""

    reason: str = ""
    """Why, as the model reads it and the history keeps it."""


@dataclass(frozen=True, slots=True, init=False)
class Ask:
    """Hold the call for a person's decision.

    Args:
        approvers: who may decide; the static rule's approvers, else the default
            approver (the call's actor, else the room's participants) when ``None``.
        quorum: how many of the approvers must approve together; the static rule's
            quorum when ``None``.
        timeout: seconds they have; the static rule's, else the handler's, when ``None``.
        reason: why a person is asked (kept in the history).

    Raises:
        ValueError, TypeError: an argument is not one ``Ask`` takes (an approver that is no
            actor name: empty, over 256 characters, unprintable, or with a space at
            either end).
    """

    approvers: tuple[str, ...] | None
    quorum: int | None
    timeout: float | None
    reason: str

    def __init__(
        self,
        approvers: str | Iterable[str] | None = None,
        quorum: int | None = None,
        timeout: float | None = None,
        reason: str = "",
    ) -> None:
        listed: tuple[str, ...] | None = None
        if approvers is not None:
            listed = (approvers,) if isinstance(approvers, str) else tuple(approvers)
            if not listed:
                raise ValueError("Ask approvers name at least one actor id, got none")
            for name in listed:
                problem = actor_name_problem(name)
                if problem is not None:
                    # Nobody could sign in as it: the call would wait on no one.
                    raise ValueError(f"Ask approvers are actor ids: one {problem} ({RULE})")
        if quorum is not None and (isinstance(quorum, bool) or not isinstance(quorum, int)):
            raise TypeError(f"Ask quorum is a count of approvals, got {quorum!r}")
        if quorum is not None and quorum < 1:
            raise ValueError(f"Ask quorum is at least 1, got {quorum}")
        check_deadline("Ask timeout", timeout)
        object.__setattr__(self, "approvers", listed)
        object.__setattr__(self, "quorum", quorum)
        object.__setattr__(self, "timeout", None if timeout is None else float(timeout))
        object.__setattr__(self, "reason", reason)


@dataclass(frozen=True, slots=True)
class Abstain:
    """No opinion: the tool's static rule (or none) decides."""

    reason: str = ""
    """Why (kept in the history)."""


PolicyDecision = Allow | Deny | Ask | Abstain
"""What ``decide`` returns."""

DecisionName = Literal["allow", "deny", "ask", "abstain"]


def decision_name(decision: PolicyDecision) -> DecisionName:
    """``allow``, ``deny``, ``ask`` or ``abstain``: the decision as the history names it."""
    if isinstance(decision, Allow):
        return "allow"
    if isinstance(decision, Deny):
        return "deny"
    if isinstance(decision, Ask):
        return "ask"
    return "abstain"


@runtime_checkable
class Policy(Protocol):
    """Decides whether a tool call runs, is refused, or waits for a person.

    Optional attributes, read when present: ``name`` (how the history names the policy;
    the class name otherwise), ``version`` (which text of it decided), ``shadow`` (``True``:
    decisions are recorded and counted, today's behaviour is kept) and ``on_error``
    (``"ask"``, the default, or ``"deny"``: what a ``decide`` that raises comes to), and
    ``timeout`` (the seconds an awaitable ``decide`` has; 10 otherwise), and ``adecide``
    (an awaitable decision the pipeline takes instead of ``decide``'s: Rego decides off the
    event loop through it; Cedar, which has none, decides on the loop).
    """

    def decide(self, call: PolicyCall) -> PolicyDecision | Awaitable[PolicyDecision]:
        """The decision on ``call`` (plain or awaitable)."""
        ...

"""What a notification surface is handed, and what it hands back.

A surface (a webhook, an email sender, Slack, ...) turns one :class:`Notice` into one
delivery. The notifier decides who is told what and when, records each notice in the store
before it is sent, and retries what a surface reports as worth retrying; a surface only
sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from roomkit.auth.names import RULE, actor_name_problem
from roomkit.models.pending_input import PendingInput

__all__ = [
    "DeliveryError",
    "Directory",
    "Notice",
    "NoticeType",
    "Person",
    "Surface",
]

NoticeType = Literal[
    "question_pending",
    "question_reminder",
    "question_escalated",
    "question_edited",
    "question_settled",
]
"""What happened: a request opened, is still waiting, reached someone new, had its
arguments edited by one of a quorum (the others vote again), or settled."""


@dataclass(frozen=True, slots=True)
class Person:
    """How to reach one actor. Every field is optional."""

    email: str | None = None
    slack_user: str | None = None
    """The Slack user id (``U012AB3CD``), for a direct message and to map clicks back."""
    manager: str | None = None
    """The actor id an ``escalate(to="manager")`` step adds."""


def _shown(value: object) -> str:
    """A name as a message shows it: quoted, escaped, and cut short."""
    return repr(value)[:40]


class Directory:
    """Actor ids to :class:`Person` entries; an actor not listed has no contact point.

    Each actor id, and each entry's ``manager``, is an actor name
    (:mod:`roomkit.auth.names`): the same rule the desk's tokens follow.

    Raises:
        ValueError: an actor id or a manager is not an actor name.
        TypeError: an entry is not a :class:`Person`.
    """

    __slots__ = ("_by_slack", "_people")

    def __init__(self, people: Mapping[str, Person] | None = None) -> None:
        self._people = dict(people or {})
        for actor, person in self._people.items():
            problem = actor_name_problem(actor)
            if problem is not None:
                raise ValueError(f"Directory: the actor id {_shown(actor)} {problem}: {RULE}")
            if not isinstance(person, Person):
                raise TypeError(f"Directory: {actor!r} must map to a Person, not {person!r}")
            if person.manager is not None and (problem := actor_name_problem(person.manager)):
                raise ValueError(
                    f"Directory: {actor!r}'s manager {_shown(person.manager)} {problem}: {RULE}"
                )
        self._by_slack = {p.slack_user: a for a, p in self._people.items() if p.slack_user}

    def get(self, actor_id: str) -> Person | None:
        """The entry for ``actor_id``, or ``None``."""
        return self._people.get(actor_id)

    def actor_for_slack_user(self, slack_user: str) -> str | None:
        """The actor whose entry names this Slack user id, or ``None``."""
        return self._by_slack.get(slack_user)

    def __contains__(self, actor_id: object) -> bool:
        return actor_id in self._people

    def __len__(self) -> int:
        return len(self._people)


@dataclass(frozen=True, slots=True)
class Notice:
    """One thing to tell, through one surface, about one request."""

    type: NoticeType
    delivery_id: str
    """Stable across every retry of this delivery (a webhook's ``webhook-id``)."""
    request: PendingInput
    """The request as the store holds it when the notice is sent."""
    recipient: str | None = None
    """The actor this notice is for; ``None`` for a surface that tells no one in particular
    (a webhook)."""
    person: Person | None = None
    """The recipient's directory entry, when there is one."""
    answer_url: str | None = None
    """A signed, expiring, single-use link answering as ``recipient``; ``None`` when the
    notifier has no desk URL, no recipient, or the request has settled."""
    desk_url: str | None = None
    outcome: str | None = None
    """On ``question_settled``: ``resolved``, ``rejected``, ``timed_out`` or ``withdrawn``."""
    answered_by: str | None = None
    answered_via: str | None = None
    """The surface the winning answer came through (``desk``, ``slack``, ``api``, ...)."""
    receipts: tuple[Mapping[str, Any], ...] = field(default=())
    """What this surface returned for earlier notices of this request to this recipient,
    oldest first (for example the Slack messages to update in place)."""
    approvers: tuple[str, ...] = field(default=())
    """Who may answer the request now (its actor, and whoever an escalation added)."""
    answer_urls: Mapping[str, str] = field(default_factory=dict)
    """Per approver, a signed, expiring, single-use link answering as them (for a surface
    that tells no one in particular, such as a webhook); empty without a desk URL."""
    deadline_at: datetime | None = None
    """When the request times out (UTC), when it has a deadline."""


class DeliveryError(Exception):
    """A delivery failed. ``retry`` says whether sending again may succeed.

    The message says what to fix (a bad token, an unknown user, a refused address).
    """

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


@runtime_checkable
class Surface(Protocol):
    """Somewhere a notice can be sent."""

    name: str
    """Short and stable (``webhook``, ``email``, ``slack``): recorded in the history."""

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """Whether this surface can tell ``recipient`` (``None``: tell no one in particular)."""
        ...

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Deliver ``notice``; return a JSON-able receipt to keep, or ``None``.

        Raises :class:`DeliveryError` when it fails.
        """
        ...

    async def aclose(self) -> None:
        """Free connections; called once when the notifier stops."""
        ...

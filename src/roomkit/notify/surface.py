"""What a notification surface is handed, and what it hands back.

A surface (a webhook, an email sender, Slack, ...) turns one :class:`Notice` into one
delivery. The notifier decides who is told what and when, records each notice in the store
before it is sent, and retries what a surface reports as worth retrying; a surface only
sends. A surface's name is recorded as the ``surface`` of the entries its deliveries write,
so every surface checks the ``name=`` it is given with :func:`surface_name` as it is made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from roomkit.core.exceptions import InvalidTextError
from roomkit.models.json_limits import MAX_ID_CHARS
from roomkit.models.pending_input import PendingInput

# What a surface may put in a header, checked as it is given, not as it is sent.
from roomkit.notify._header_values import header_value_problem

# The directory lives with the people it lists; its names stay importable from here.
from roomkit.people import Directory, Person
from roomkit.tools.human_input.checks import check_surface

__all__ = [
    "SENDING",
    "DeliveryError",
    "Directory",
    "Notice",
    "NoticeType",
    "Person",
    "Surface",
    "header_value_problem",
    "surface_name",
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

SENDING = "sending"
"""The field of a delivery's receipt that holds what :attr:`Notice.sending` was told: where
an attempt was sending, which it may have reached."""


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
    got_through: Mapping[str, Any] = field(default_factory=dict)
    """On a retry, what earlier attempts of this same delivery got through (the receipts of
    their :class:`DeliveryError`, joined); empty on a first attempt. A surface that reaches
    several receivers (Web Push: a person's devices) sends a retry only to the others."""
    sending: Callable[[Mapping[str, Any]], Awaitable[None]] | None = field(
        default=None, repr=False, compare=False
    )
    """Records where the notice is about to go (JSON-ready), with the delivery, before it
    is sent; ``None`` for an ending, or outside a notifier. A surface whose receivers are
    known only as it sends (Web Push: the person's devices) awaits it first, so that how the
    request ends reaches them even when the process dies during the send. The notifier keeps
    it under :data:`SENDING` in the delivery's receipt, which later notices of the request
    get in :attr:`receipts`."""


class DeliveryError(Exception):
    """A delivery failed. ``retry`` says whether sending again may succeed.

    The message says what to fix (a bad token, an unknown user, a refused address).
    ``receipt`` is what went through all the same (some of a person's devices): the
    notifier keeps it with the delivery and joins it to the receipt of whatever comes of
    the delivery after, so that how the request ended reaches those it showed the question
    to. A delivery that ends failed or skipped after some of it went through (or may have:
    see :attr:`Notice.sending`) is marked ``"partial": true`` in its receipt.

    ``alone`` says the failure is this delivery's own, not its surface's: a surface that
    reaches many independent receivers (Web Push: a push service per device) backs each off
    itself, so the notifier retries this delivery on its own schedule and the surface's
    other deliveries go on without waiting (see :mod:`roomkit.notify._lanes`).

    ``retry_after`` is how many seconds must pass before another attempt can go through
    (a receiver backing off): the notifier retries no sooner, whatever its own schedule, and
    no later than the surface's give-up time (``Retry.give_up``), however long it asks.
    """

    def __init__(
        self,
        message: str,
        *,
        retry: bool,
        receipt: Mapping[str, Any] | None = None,
        alone: bool = False,
        retry_after: float = 0.0,
    ) -> None:
        super().__init__(message)
        self.retry = retry
        self.receipt = receipt
        self.alone = alone
        self.retry_after = retry_after


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


def surface_name(name: object, *, what: str, example: str) -> str:
    """Return ``name`` when it may be a surface's name; raise otherwise.

    Args:
        name: the name given.
        what: where it was given, to start each message (``"Ntfy(name=...)"``).
        example: a name to suggest in its place (the surface's default).

    Raises:
        TypeError: ``name`` is not a ``str``.
        ValueError: it is longer than a surface may be; the message says how long it may be.
        InvalidTextError: it holds text UTF-8 cannot encode (a lone surrogate).
    """
    if type(name) is str and len(name) <= MAX_ID_CHARS and name.isascii():
        return name  # the common case: a short name
    if not isinstance(name, str):
        raise TypeError(
            f"{what} is the surface's name in histories and must be a str, "
            f"got {type(name).__name__}: pass a short name, such as {example!r}"
        )
    if len(name) > MAX_ID_CHARS:
        raise ValueError(
            f"{what} is {len(name):,} characters, over the {MAX_ID_CHARS} a surface may have "
            f"on every store (each shown and delivered entry records it): pass a short name, "
            f"such as {example!r}"
        )
    try:
        check_surface(name)
    except InvalidTextError as error:
        raise InvalidTextError(f"{what}: {error}") from None
    return name

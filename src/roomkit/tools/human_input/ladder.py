"""Ladders: what happens to a request nobody answers — remind, escalate, a safe default.

A :class:`Ladder` is declared on :class:`~roomkit.tools.human_input.HumanInputToolHandler`
(``ladder=``). Its steps are measured from the request's creation (a question it asks, or
an approval of one of its held tools) and recorded in the store's outbox with the request,
so whichever process runs a notifier carries each one out once, across restarts.
``on_expiry=default(text)`` turns a timeout into an answer the model reads as a default
(``roomkit.tools.texts.human_input_defaulted``), put in the request's history once
(:func:`record_default`) however many processes read the timeout at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from roomkit.models.clock import positive_seconds, utcnow
from roomkit.stores import new_entry
from roomkit.stores.outbox import OutboxItem, now_of

if TYPE_CHECKING:
    from roomkit.models.pending_input import PendingInput
    from roomkit.tools.human_input.handler import HumanInputHandler

logger = logging.getLogger("roomkit.tools.human_input")

MAX_DEFAULT_CHARS = 32_000
"""The longest default answer, as JSON: its ``defaulted`` history entry must fit the
characters a history entry holds (:data:`roomkit.stores.MAX_ENTRY_CHARS`), beside the
ladder's record of it."""

__all__ = [
    "MAX_DEFAULT_CHARS",
    "Default",
    "Escalate",
    "Ladder",
    "Remind",
    "Step",
    "default",
    "escalate",
    "keep_ladder",
    "record_default",
    "record_ladder",
    "remind",
]


@dataclass(frozen=True, slots=True)
class Remind:
    """Tell the approvers again, ``after`` seconds from the request's creation."""

    after: float


@dataclass(frozen=True, slots=True)
class Escalate:
    """Add ``to`` to the request's approvers ``after`` seconds from its creation.

    ``to`` is ``"manager"`` (each approver's manager in the notifier's directory; for a
    role or an on-call schedule, the managers of the people standing for it then) or an
    actor id.
    """

    after: float
    to: str


@dataclass(frozen=True, slots=True)
class Default:
    """On expiry, the answer the model reads instead of a timeout, marked as a default."""

    text: str


Step = Remind | Escalate


def remind(after: float) -> Remind:
    """A reminder ``after`` seconds from the request's creation."""
    return Remind(positive_seconds("after", after))


def escalate(after: float, to: str = "manager") -> Escalate:
    """An escalation to ``to`` (``"manager"`` or an actor id) ``after`` seconds in."""
    if not isinstance(to, str) or not to:
        raise ValueError(f"escalate(to=...) must name 'manager' or an actor id, not {to!r}")
    return Escalate(positive_seconds("after", after), to)


def default(text: str) -> Default:
    """The answer text (as ``aresolve`` takes it) used when nobody answers in time.

    Raises:
        TypeError: ``text`` is not a ``str``.
        ValueError: ``text`` is longer than :data:`MAX_DEFAULT_CHARS` as JSON (the history
            entry recording that it was given could not be kept).
    """
    if not isinstance(text, str):
        raise TypeError(f"default() takes the answer as text, got {type(text).__name__}")
    size = len(json.dumps(text, ensure_ascii=False))
    if size > MAX_DEFAULT_CHARS:
        raise ValueError(
            f"default() takes an answer of at most {MAX_DEFAULT_CHARS} characters as JSON, got "
            f"{size}: give a short default, and keep the long text where the answer points to"
        )
    return Default(text)


class Ladder:
    """Steps for a request left waiting, and what its expiry means.

    Args:
        *steps: :func:`remind` and :func:`escalate` steps, in any order (run by time).
        on_expiry: :func:`default` to answer with a default on expiry; ``None`` keeps the
            timeout.
    """

    __slots__ = ("on_expiry", "steps")

    def __init__(self, *steps: Step, on_expiry: Default | None = None) -> None:
        for step in steps:
            if not isinstance(step, Remind | Escalate):
                raise TypeError(f"Ladder takes remind(...) and escalate(...) steps, got {step!r}")
        if on_expiry is not None and not isinstance(on_expiry, Default):
            raise TypeError(f"on_expiry must be default(text) or None, got {on_expiry!r}")
        self.steps: tuple[Step, ...] = tuple(sorted(steps, key=lambda step: step.after))
        self.on_expiry = on_expiry

    def check(self, timeout: float) -> None:
        """Refuse a step at or past ``timeout`` (the request would have expired).

        Raises:
            ValueError: a step is due at or after ``timeout`` seconds.
        """
        for step in self.steps:
            if step.after >= timeout:
                kind = type(step).__name__.lower()
                raise ValueError(
                    f"Ladder: the {kind} step at {step.after:g}s is at or past the "
                    f"{timeout:g}s timeout, so it would never run: make it earlier, or "
                    "raise the timeout"
                )

    def __repr__(self) -> str:
        return f"Ladder({', '.join(map(repr, self.steps))}, on_expiry={self.on_expiry!r})"


_FALLBACK = 1000
"""Where the step numbers of a fallback ladder (a notifier's file's) start, so that its step
ids never meet those of the tool's own ladder recorded at the same moment."""


async def record_ladder(
    handler: HumanInputHandler, request: PendingInput, ladder: Ladder, *, fallback: bool = False
) -> None:
    """Record ``ladder``'s steps for ``request`` in the store's outbox (once: recording them
    again, as a re-attached request does, changes nothing).

    Each step is due ``after`` seconds from the request's creation, on the store's clock.
    ``fallback``: the ladder is for a request whose tool has none of its own (a notifier's
    file's); its steps are skipped when they come due if the tool's own were recorded too.
    """
    if not ladder.steps:
        return
    now = now_of(handler)
    age = max(0.0, (utcnow() - _aware(request.created_at)).total_seconds())
    items = []
    first = _FALLBACK if fallback else 0
    for index, step in enumerate(ladder.steps, start=first):
        job = "remind" if isinstance(step, Remind) else "escalate"
        body: dict[str, object] = {"job": job}
        if fallback:
            body["fallback"] = True
        if isinstance(step, Escalate):
            body["to"] = step.to
        items.append(
            OutboxItem(
                f"{request.pending_id}.{job}{index}",
                request.pending_id,
                now - age + step.after,
                body,
                created=now,
            )
        )
    await handler.outbox.add(items)


async def keep_ladder(handler: HumanInputHandler, request: PendingInput, ladder: Ladder) -> None:
    """Record ``ladder`` for ``request`` (a question or an approval); a failure is logged,
    and the request stands without its ladder: an answer is never held up by it.

    A call cut while its ladder is written (its session ended, its turn was cancelled) has
    its request withdrawn, as a cut ``wait()`` does: nobody will wait on it, so a late answer
    is refused rather than taken.
    """
    try:
        await record_ladder(handler, request, ladder)
    except asyncio.CancelledError:
        await handler._abandon(request.pending_id)
        raise
    except Exception:
        logger.exception("could not record the ladder of %s", request.pending_id)


async def record_default(handler: HumanInputHandler, pending_id: str, answer: str) -> None:
    """Put the ladder's default ``answer`` in the history of the timed-out ``pending_id``,
    once however many callers read its timeout at once (processes re-attaching to one keyed
    call, resumers of one pause), and whenever one of them dies.

    The entry goes in only while the history is as the caller read it, without one
    (:meth:`~roomkit.tools.human_input.HumanInputHandler.record_at`); when another entry
    came first, the history is read again. So callers racing write it once, and an append
    the store did not see through (unreachable, cut by its timeout, or its caller
    cancelled) that lands later takes the place a later caller's would: one of the two is
    written, and a caller killed before its append leaves the entry to the next.

    Raises:
        StoreError: the store failed the read, or the append (which may still land).
        ValueError, InvalidTextError: ``answer`` cannot be kept in a history entry.
    """
    entry = new_entry("defaulted", answer=answer)
    while True:
        history = await handler.history(pending_id)
        if any(item.get("type") == "defaulted" for item in history):
            return
        if await handler.record_at(pending_id, entry, seq=len(history), open_only=False):
            return


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=utcnow().tzinfo)

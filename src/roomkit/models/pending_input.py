"""A request for human input (a question or an approval), its status, and its event."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import operator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum, unique
from typing import Any

from roomkit.models.clock import utcnow
from roomkit.models.enums import ChannelType

__all__ = [
    "PendingInput",
    "PendingInputEvent",
    "PendingInputStatus",
    "Vote",
    "arguments_digest",
]


@unique
class PendingInputStatus(StrEnum):
    """Where a request stands. Only ``PENDING`` can change, and only once."""

    PENDING = "pending"
    RESOLVED = "resolved"
    REJECTED = "rejected"
    TIMED_OUT = "timed_out"


@dataclass(frozen=True, slots=True)
class Vote:
    """One approver's vote on a quorum approval (see :attr:`PendingInput.votes`)."""

    actor: str
    """Who voted: one of the listed approvers."""
    decision: str
    """``"approve"``, ``"edit"`` or ``"reject"``."""
    at: datetime
    """When the store recorded the vote (UTC)."""
    digest: str
    """The digest of the arguments the vote was cast on."""
    edited: str | None = None
    """On an edit, the digest of the replacement arguments (which the edit approves)."""
    reason: str | None = None
    """On a rejection, why."""
    token: str = field(default="", repr=False, compare=False)
    """The vote call's own token: the same call run again after a fault finds it counted."""
    on_behalf_of: str | None = None
    """The approver of record this vote counts for, when the voter stands in for them (a
    delegate, a role's member); ``None`` when it counts for the voter."""

    @property
    def principal(self) -> str:
        """Whom the vote counts for: one vote per approver of record."""
        return self.on_behalf_of or self.actor

    @property
    def approves(self) -> str | None:
        """The digest of the arguments this vote approves; ``None`` for a rejection."""
        if self.decision == "approve":
            return self.digest
        if self.decision == "edit":
            return self.edited
        return None


@dataclass(slots=True, eq=False)
class PendingInput:
    """A tool call waiting for a person.

    The handler owns the status fields; read them, do not assign them. Two requests are
    equal only when they are the same object.
    """

    pending_id: str
    """Unique id, used to resolve or reject the request."""
    tool_name: str
    """The tool the model called."""
    arguments: dict[str, Any]
    """The call's arguments, as validated (and possibly rewritten) by the tool loop."""
    room_id: str
    """The room of the turn that raised the request ("" when unknown)."""
    tool_call_id: str
    """The provider-assigned id of the tool call ("" when unknown)."""
    channel_id: str
    """The channel that raised the request ("" when unknown)."""
    status: PendingInputStatus = PendingInputStatus.PENDING
    """``PENDING`` until an answer, a rejection, a timeout or a withdrawal settles it."""
    result: str | None = None
    """The answer, once resolved."""
    reject_reason: str | None = None
    """Why the request was rejected, once rejected."""
    detached: bool = False
    """No one will ``wait()`` on it: its creator frees it with ``release()``."""
    created_at: datetime = field(default_factory=utcnow)
    """When the request was created (UTC)."""
    actor_id: str | None = None
    """The participant whose turn raised the request, or ``None`` for an authorless turn."""
    channel_type: ChannelType = ChannelType.AI
    """The door the call came through (AI, realtime voice, conference)."""
    withdrawn: bool = False
    """True when the handler itself gave the request up (closed or released it)."""
    deadline: float | None = None
    """When the request times out; ``None`` until a wait sets one.

    On the event loop's clock with the memory store; on a durable store's clock (seconds
    since the epoch), so that every process sharing the store reads the same deadline.
    An answer is accepted if and only if the store records it before it records the
    timeout. With the memory store a loop timer records the timeout, so an answer is
    accepted while that timer's callback has not run: past the deadline by at most how far
    the loop runs behind. On a durable store see ``DurableStore.settle``.
    """
    key: str | None = None
    """The idempotency key, within its owner's scope: a create by the same owner (room,
    channel and actor) with the same key re-attaches to this request. It is kept as the JSON
    array ``[room_id, channel_id, actor_id, key]`` (see ``create(key=...)``)."""
    answer_schema: dict[str, Any] | None = None
    """The JSON Schema an answer must match (the answer is JSON text), or ``None``."""
    settled_by: str | None = None
    """Who answered or rejected it (an actor id), when the settler said."""
    kind: str = "question"
    """``"question"`` (a human-input tool asks) or ``"approval"`` (a held tool waits for a
    decision: ``tool_name`` is the held tool, ``arguments`` its final validated arguments,
    and ``answer_schema`` its JSON Schema, which an edit must match)."""
    arguments_digest: str | None = None
    """On an approval, the SHA-256 hex digest of the arguments shown
    (:func:`arguments_digest`); ``None`` on a question."""
    approvers: tuple[str, ...] = ()
    """Who may decide an approval now; on a question, who was added by an escalation
    (with the question's actor), besides whoever may see it (empty until then). On a quorum
    approval, the listed approvers who have not voted on the current arguments yet."""
    quorum: int | None = None
    """On a quorum approval, how many distinct listed approvers must approve the same
    arguments; ``None`` when any one approver decides."""
    veto: bool = True
    """On a quorum approval, whether one rejection rejects it (else it is rejected once
    approval can no longer be reached)."""
    voters: tuple[str, ...] = ()
    """On a quorum approval, every listed approver (``Quorum(of=...)``)."""
    votes: tuple[Vote, ...] = ()
    """On a quorum approval, the votes recorded, oldest first; an edit restarts the count,
    so only the votes on the current :attr:`arguments_digest` count."""
    _waiters: asyncio.Future[None] | list[asyncio.Future[None]] | None = field(
        default=None, init=False, repr=False
    )
    # Where the handler's deadline schedule keeps this request's deadline; None when none.
    _deadline_entry: object = field(default=None, init=False, repr=False)
    # On the memory store, the request's history as recorded (linked when read; an int
    # for a question asked and then resolved at that time); None when its history is kept
    # elsewhere (a durable store) or nothing was recorded.
    _history: tuple[object, ...] | int | None = field(default=None, init=False, repr=False)


# A request's creation time is one clock read when the handler makes it, which costs a
# fraction of building a datetime and holds half the memory: the slot keeps the timestamp,
# and ``created_at`` makes the datetime on the first read and keeps it in its place. Writes
# (the dataclass's ``__init__`` among them) store what they are given, as a plain slot does.
_created_slot: Any = PendingInput.__dict__["created_at"]
_created_get = _created_slot.__get__
_created_set = _created_slot.__set__
_from_timestamp = datetime.fromtimestamp


def _created_at(request: PendingInput) -> datetime:
    value = _created_get(request, PendingInput)
    if type(value) is float:
        value = _from_timestamp(value, UTC)
        _created_set(request, value)
    return value  # type: ignore[no-any-return]


# setattr: the class's annotation stays ``datetime`` for readers and type checkers.
setattr(  # noqa: B010
    PendingInput,
    "created_at",
    property(_created_at, _created_set, doc="When the request was created (UTC)."),
)

set_created = _created_set
"""``set_created(request, timestamp)``: store a POSIX timestamp as the request's creation
time, made a datetime on its first read (for a maker that sets the fields itself)."""

_INIT = [name for name, kept in PendingInput.__dataclass_fields__.items() if kept.init]
_BEFORE_CREATED = operator.attrgetter(*_INIT[: _INIT.index("created_at")])
_AFTER_CREATED = operator.attrgetter(*_INIT[_INIT.index("created_at") + 1 :])
_HELD = tuple(
    PendingInput.__dict__[name]
    for name, kept in PendingInput.__dataclass_fields__.items()
    if not kept.init
)


def copy_request(request: PendingInput) -> PendingInput:
    """A shallow copy of ``request``, as ``copy.copy`` makes it, at a fraction of its cost
    (the creation time copied as it is held)."""
    held: Any = (*_BEFORE_CREATED(request), _created_get(request, PendingInput))
    clone = PendingInput(*held, *_AFTER_CREATED(request))
    for slot in _HELD:
        slot.__set__(clone, slot.__get__(request, PendingInput))
    return clone


@dataclass(frozen=True, slots=True)
class PendingInputEvent:
    """What ON_USER_INPUT_REQUIRED hooks receive when a request opens."""

    pending_id: str
    """The id to pass to ``resolve()`` / ``reject()``."""
    tool_name: str
    """The tool the model called, e.g. ``"AskUserQuestion"``."""
    arguments: dict[str, Any]
    """The call's arguments, e.g. ``{"question": "..."}``."""
    room_id: str
    """The room of the turn that raised the request."""
    tool_call_id: str
    """The provider-assigned id of the tool call."""
    channel_id: str
    """The channel that raised the request."""
    channel_type: ChannelType
    """The door the call came through."""
    timestamp: datetime = field(default_factory=utcnow)
    """When the request was announced (UTC)."""
    actor_id: str | None = None
    """Who to ask: the participant whose turn raised the request, or ``None``."""
    kind: str = "question"
    """``"question"`` or ``"approval"`` (see :attr:`PendingInput.kind`)."""
    arguments_digest: str | None = None
    """On an approval, the digest of the arguments shown; ``None`` on a question."""
    approvers: tuple[str, ...] = ()
    """Who may decide an approval; on a question, who an escalation added (see
    :attr:`PendingInput.approvers`)."""

    @classmethod
    def for_request(cls, request: PendingInput) -> PendingInputEvent:
        """The event announcing ``request``, with a copy of its arguments: a notification
        that trims what it shows leaves the request (and the call it asks about) as it was."""
        return cls(
            request.pending_id,
            request.tool_name,
            copy.deepcopy(request.arguments),
            request.room_id,
            request.tool_call_id,
            request.channel_id,
            request.channel_type,
            request.created_at,
            request.actor_id,
            request.kind,
            request.arguments_digest,
            request.approvers,
        )


def arguments_digest(tool_name: str, arguments: dict[str, Any]) -> str:
    """The SHA-256 hex digest that binds an approval to the arguments it shows.

    Computed over ``json.dumps({"tool": tool_name, "arguments": arguments}, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)`` encoded as UTF-8, so anyone holding the
    arguments can compute it again.
    """
    text = _DIGESTED.encode({"tool": tool_name, "arguments": arguments})
    return hashlib.sha256(text.encode()).hexdigest()


_DIGESTED = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""What :func:`arguments_digest` encodes with: ``json.dumps`` with options makes one per call."""

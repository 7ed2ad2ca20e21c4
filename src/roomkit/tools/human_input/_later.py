"""Entries kept as what they are made of, and made when the history is read.

On the memory store a request's history is linked when it is read
(:mod:`~roomkit.tools.human_input._memory_trail`): an entry that is only ever read is kept
as a small tuple of what it is made of (a later entry), and made then, as it would have
been made at once, its time spelled from the nanoseconds it was stamped with. Here: the
``created``, ``decided`` and ``settled`` entries of an approval settled as it is made
(:func:`settled_at_once`), and the ``executed`` entry of an approval's run
(:func:`record_run`), which a durable store writes at once.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores import check_entry, detached, stamp_time
from roomkit.tools.human_input._decisions import _created
from roomkit.tools.human_input._memory_trail import LaterEntry, MemoryTrail

if TYPE_CHECKING:
    from roomkit.models.decisions import Decision
    from roomkit.models.pending_input import PendingInput
    from roomkit.tools.human_input.handler import HumanInputHandler

__all__ = ["record_run", "settled_at_once"]

_RESOLVED = PendingInputStatus.RESOLVED
_REJECTED = PendingInputStatus.REJECTED
_STATUS_TEXTS = {_RESOLVED: _RESOLVED.value, _REJECTED: _REJECTED.value}
"""Each status's text, read once: an enum's ``value`` is a property."""

_new = tuple.__new__
"""Makes a later entry from its fields in one C call (a named tuple's own ``__new__`` is a
Python function): later entries are made once per call."""

_PLAIN_CHARS = 4096
"""A run's result this long at most, in ASCII, makes an entry any history takes."""


def settled_at_once(
    request: PendingInput,
    decision: Decision,
    by: str | None,
    surface: str | None,
    description: str | None,
) -> tuple[PendingInputStatus, str, LaterEntry, tuple[LaterEntry, LaterEntry]]:
    """The settle of the approval ``request`` with ``decision`` (an approval or a
    rejection) by ``by`` as it is made: its status, its answer or reason, its ``created``
    entry, and its ``decided`` and ``settled`` entries, as later entries made now."""
    at = time.time_ns()
    if decision.kind == "approve":
        status, text = _RESOLVED, decision.canonical
        decided = _new(_Decided, (at, by, surface, "approve", request.arguments_digest))
    else:
        status, text = _REJECTED, decision.text
        decided = _new(_Decided, (at, by, surface, "reject", text))
    created = _new(
        _Created,
        (
            request.actor_id,
            request.tool_name,
            request.arguments_digest,
            detached(request.arguments),
            request.approvers,
            request.room_id,
            request.channel_id,
            surface,
            description,
            at,
        ),
    )
    settled = _new(_Settled, (at, by, surface, _STATUS_TEXTS[status]))
    return status, text, created, (decided, settled)


class _Created(NamedTuple):
    """An approval's ``created`` entry: the request's fields it records, named as the
    request names them, with a copy of its arguments of its own."""

    actor_id: str | None
    tool_name: str
    arguments_digest: str | None
    arguments: dict[str, Any]
    approvers: tuple[str, ...]
    room_id: str
    channel_id: str
    surface: str | None
    description: str | None
    at: int

    def entry(self) -> dict[str, Any]:
        # The request's own entry, made from the fields it reads of the request.
        entry = _created(cast("PendingInput", self), self.surface, self.description)
        entry["at"] = stamp_time(self.at)
        return entry

    def checked(self) -> _Created:
        return self


class _Decided(NamedTuple):
    """A ``decided`` entry: an approval (with the digest approved) or a rejection (with
    its reason)."""

    at: int
    actor: str | None
    surface: str | None
    decision: str
    detail: str | None

    def entry(self) -> dict[str, Any]:
        named = "digest" if self.decision == "approve" else "reason"
        return {
            "type": "decided",
            "at": stamp_time(self.at),
            "actor": self.actor,
            "surface": self.surface,
            "decision": self.decision,
            named: self.detail,
        }

    def checked(self) -> _Decided:
        return self


class _Settled(NamedTuple):
    """A ``settled`` entry."""

    at: int
    actor: str | None
    surface: str | None
    status: str

    def entry(self) -> dict[str, Any]:
        return {
            "type": "settled",
            "at": stamp_time(self.at),
            "actor": self.actor,
            "surface": self.surface,
            "status": self.status,
        }

    def checked(self) -> _Settled:
        return self


async def record_run(
    handler: HumanInputHandler,
    pending_id: str,
    digest: str | None,
    *,
    ran: bool,
    is_error: bool,
    content: str,
) -> int:
    """Append the ``executed`` entry of an approval's run to its history; its ``seq``.

    On the memory store the entry is kept as what it is made of (checked now) and made when
    the history is read; elsewhere it is made and written now.

    Raises:
        UnknownRequestError: as :meth:`HumanInputHandler.record`.
        TypeError, ValueError, InvalidTextError: ``content`` is no text a history takes.
    """
    run = _new(_Run, (digest, ran, is_error, content, time.time_ns()))
    log = handler._decisions.log
    if type(log) is MemoryTrail:
        return log.keep(pending_id, run.checked())
    return await handler.record(pending_id, run.entry())


class _Run(NamedTuple):
    """A run's ``executed`` entry, as what it is made of (a later entry)."""

    digest: str | None
    ran: bool
    is_error: bool
    content: str
    at: int

    def entry(self) -> dict[str, Any]:
        return {
            "type": "executed",
            "at": stamp_time(self.at),
            "actor": None,
            "surface": None,
            "digest": self.digest,
            "ran": self.ran,
            "is_error": self.is_error,
            "content": self.content,
        }

    def checked(self) -> _Run:
        digest, content = self.digest, self.content
        # The flags are the run's own; a digest is hex, a short ASCII result storable.
        plain = type(content) is str and content.isascii() and len(content) <= _PLAIN_CHARS
        if not plain or (digest is not None and (type(digest) is not str or not digest.isascii())):
            check_entry(self.entry())
        return self

"""The histories of requests on the memory store: recorded cheaply, linked when read.

A request's history rides on the request itself (``PendingInput._history``), so it lives
exactly as long as the store knows the request: while it is open, while its outcome is
retained, and, with ``MemoryStore(audit_retention=...)``, while it is among the settled
requests kept for their history. However many requests come and go, memory follows the
retention.

Recording costs next to nothing: a question's ``created`` entry is the marker
:data:`ASKED` (the entry is made from the request's own fields, which never change once
it is stored), a settle by the handler is a small tuple (its status, the time in
nanoseconds, whether the handler withdrew it) or, for a resolve, the time alone (an
``int``), and an entry given as a dict is kept as it is. The history of a question asked
and then resolved by the handler, the most common one, is that ``int`` alone in place of
the tuple of records (:func:`recorded`). The canonical JSON and the
SHA-256 chain (:mod:`~roomkit.stores._history`) are made when someone
reads or appends to the history, and kept from then on in place of what they were made
from, so every reader sees one chain. The entries come
out exactly as if each had been linked when it was recorded.

An entry given as a dict (an approval's ``created``, a surface's ``shown``, a run's
``executed``) is taken as it is at the call: it is kept as a copy that shares no list or
object with the caller (whose values may change afterwards: an approval's ``created``
entry holds the call's arguments), and linked when read, like a settle's. A later entry
(:class:`LaterEntry`: a policy's evidence, whose input is digested only then) is kept as
what it is made of, checked as it is kept, and made into its entry when read.

On a :class:`MemoryStore` the histories have an audit trail (``handler.audit_trail``, a
:class:`~roomkit.stores.CarriedTrail`): each chain's head is signed
when the trail is read or checkpointed, at the length the handler's records gave it, and
the records are counted as they are linked, never as they are recorded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Self

from roomkit.core.exceptions import UnknownRequestError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import (
    CarriedTrail,
    MemoryStore,
    PendingStore,
    asked_entry,
    detached,
    first_prev,
    link_digest,
    linked_text,
    read_entry,
    stamp_time,
)

__all__ = [
    "ASKED",
    "ASKED_ONLY",
    "LaterEntry",
    "MemoryTrail",
    "link_now",
    "recorded",
    "settled_record",
]

ASKED = object()
"""A question's ``created`` entry, made from the request when the history is read."""
ASKED_ONLY = (ASKED,)
"""The history of a question just asked."""

_time_ns = time.time_ns
_RESOLVED = PendingInputStatus.RESOLVED.value


class LaterEntry(Protocol):
    """An entry kept as what it is made of, and made when the history is read: what a
    request's history may hold beside the entries themselves (a policy's decision, whose
    input is digested then)."""

    def entry(self) -> dict[str, Any]:
        """The entry, made now: the same every time."""
        ...

    def checked(self) -> Self:
        """Itself, once its entry is known to be one any history takes.

        Raises:
            TypeError, ValueError, InvalidTextError: as
                :func:`~roomkit.stores.check_entry` on its entry.
        """
        ...


def settled_record(status: str, withdrawn: bool = False) -> tuple[str, int, bool]:
    """A settle by the handler itself (no actor, no surface), stamped now: what becomes its
    ``settled`` entry when the history is read."""
    return (status, _time_ns(), withdrawn)


def link_now(request: PendingInput, entries: Sequence[Mapping[str, Any]]) -> None:
    """Start the history of ``request`` with ``entries`` as they are now: copies sharing
    nothing with the caller, linked when read."""
    request._history = tuple(detached(dict(entry)) for entry in entries)


def recorded(request: PendingInput) -> tuple[object, ...]:
    """The history of ``request`` as recorded: its records, oldest first."""
    history: object = request._history
    if type(history) is int:  # asked, then resolved by the handler at this time
        return (ASKED, history)
    return history or ()  # type: ignore[return-value]


def _entry(item: object, request: PendingInput) -> Mapping[str, Any]:
    """The entry that ``item`` (anything but a linked text) was recorded for."""
    if item is ASKED:
        return asked_entry(request)
    if type(item) is int:  # a resolve by the handler itself, at this time
        item = (_RESOLVED, item, False)
    if type(item) is tuple:
        status, stamp, withdrawn = item
        entry = {
            "type": "settled",
            "at": stamp_time(stamp),
            "actor": None,
            "surface": None,
            "status": status,
        }
        if withdrawn:
            entry["withdrawn"] = True
        return entry
    if type(item) is dict:
        return item
    # A later entry: kept as what it is made of, made now (the same every time).
    later: LaterEntry = item  # type: ignore[assignment]
    return later.entry()


def _linked(request: PendingInput) -> tuple[tuple[str, ...], int]:
    """The history of ``request`` as stored texts, linking what was not linked yet; and
    how many records it linked now."""
    chain = recorded(request)
    if not chain:
        return (), 0
    texts: list[str] = []
    prev = ""
    records = 0
    for item in chain:
        if type(item) is str:
            text = item
        else:
            text = linked_text(_entry(item, request), prev or first_prev(request.pending_id))
            records += 1
        texts.append(text)
        prev = link_digest(text)
    linked = tuple(texts)
    if records:
        request._history = linked
    return linked, records


class MemoryTrail:
    """The history log of a handler on the memory store: the histories its requests carry.

    Args:
        store: the handler's store; a :class:`MemoryStore` also keeps the histories of the
            settled requests its ``audit_retention`` asks for, and gives them an audit
            trail (:attr:`trail`).
    """

    __slots__ = ("_store", "trail")

    def __init__(self, store: PendingStore) -> None:
        self._store = store
        self.trail = CarriedTrail(self, store.holds) if isinstance(store, MemoryStore) else None
        """The signed heads and checkpoints of these histories; ``None`` on a store that
        cannot list the requests it holds."""

    def _recall(self, pending_id: str) -> PendingInput | None:
        store = self._store
        if isinstance(store, MemoryStore):
            return store.recall(pending_id)
        return store.get(pending_id) or store.get_settled(pending_id)

    def _texts(self, request: PendingInput) -> tuple[str, ...]:
        """The history of ``request`` as stored texts; the records linked now are counted."""
        texts, records = _linked(request)
        if records and self.trail is not None:
            self.trail.grew(request.pending_id, records)
        return texts

    def stored_texts(self) -> dict[str, list[str]]:
        """Every history the store keeps, oldest entry first (for the trail)."""
        store = self._store
        if not isinstance(store, MemoryStore):
            return {}
        chains: dict[str, list[str]] = {}
        for request in store.remembered():
            if request._history:
                chains[request.pending_id] = list(self._texts(request))
        return chains

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` (checked already) as it is now; its ``seq``.

        Raises:
            UnknownRequestError: the store no longer knows the request, so its history is
                gone (the memory store keeps it while the request is open or retained).
        """
        return self.keep(pending_id, detached(entry))

    async def append_history_at(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` (checked already) as entry ``seq`` of the open request's
        history; ``False`` when the request is not open or its history is not ``seq``
        long. Nothing awaits between the checks and the append."""
        request = self._recall(pending_id)
        if request is None or request.status is not PendingInputStatus.PENDING:
            return False
        history = recorded(request)
        if len(history) != seq:
            return False
        request._history = (*history, detached(entry))
        return True

    async def append_history_after(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` (checked already) as entry ``seq`` of the request's history,
        open or settled; ``False`` when its history is not ``seq`` long. Nothing awaits
        between the check and the append.

        Raises:
            UnknownRequestError: as :meth:`append_history`.
        """
        request = self._recall(pending_id)
        if request is not None and len(recorded(request)) != seq:
            return False
        self.keep(pending_id, detached(entry))
        return True

    def keep(self, pending_id: str, item: dict[str, Any] | LaterEntry) -> int:
        """Append ``item`` (checked already, shared with nobody) as it is; its ``seq``.

        Raises:
            UnknownRequestError: as :meth:`append_history`.
        """
        request = self._recall(pending_id)
        if request is None:
            raise UnknownRequestError(
                f"No history is kept for request {pending_id}: the memory store keeps a "
                "request's history while it is open or its outcome retained (pass "
                "MemoryStore(audit_retention=...) to keep more, or use a durable store)"
            )
        history = recorded(request)
        request._history = (*history, item)
        return len(history)

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first; empty when the store no longer knows it."""
        request = self._recall(pending_id)
        if request is None:
            return []
        return [read_entry(text, seq) for seq, text in enumerate(self._texts(request))]

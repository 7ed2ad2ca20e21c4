"""A request's history: who did what to it, when and through which surface, oldest first.

An entry is a JSON object with at least ``type`` (``created``, ``shown``, ``voted``,
``decided``, ``settled``, ``executed``, ``escalated``), ``at`` (ISO-8601 UTC), ``actor`` and
``surface`` (each a string or ``None``), and ``seq``, its place in the request's history
from 0, which the store assigns as it appends. Type-specific fields sit beside them (a
decision's or a vote's ``decision`` and ``digest``, a run's ``digest`` and ``is_error``).

The history is a chain: each entry is stored as the canonical JSON of :func:`entry_text`
(keys sorted, compact separators, UTF-8) and carries ``prev``, the SHA-256 hex digest of the
stored text of the entry before it; the first entry's ``prev`` is the digest of the
request's id (:func:`first_prev`). :func:`chain_text` makes the text of the next link. Every
store appends with a check-and-set on the chain's head (the last entry), so two processes
appending at once never fork it; :func:`broken_link` finds where a chain read back breaks.

A settle writes its entries in its own check-and-set: every store's ``settle(...,
history=entries)`` appends ``entries`` in the same transaction (or Lua script, or SQL
statement batch) that records the outcome, when and only when that settle wins, so nobody
hears of an outcome whose entries are not stored yet. When the store records the timeout in
place of a settle that came after the deadline, it appends :func:`deadline_entry` instead.
Each store names the step that appends chained entries inside a write already open,
``append_chained``, for any other write that must record its entries with it.

:mod:`roomkit.stores._history_stores` says what a store's history offers;
:class:`~roomkit.stores.memory._history.MemoryHistory` keeps histories in this process's
memory.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from roomkit._storable import unencodable_text
from roomkit.core.exceptions import CorruptRecordError, InvalidTextError
from roomkit.models.history import ENTRY_MODELS, ENTRY_TYPES, Entry, check_fields
from roomkit.models.json_limits import MAX_APPROVERS, MAX_ARGUMENTS_CHARS, MAX_ID_CHARS
from roomkit.models.pending_input import PendingInput, arguments_digest

__all__ = [
    "ENTRY_TYPES",
    "MAX_ARGUMENTS_CHARS",
    "asked_entry",
    "broken_link",
    "chain_text",
    "chain_texts",
    "check_entries",
    "check_entry",
    "deadline_entry",
    "detached",
    "entry_text",
    "entry_time",
    "first_prev",
    "link_digest",
    "linked_chain",
    "linked_text",
    "linked_texts",
    "new_entry",
    "read_entry",
    "settled_entry",
    "stamp_time",
    "stored_seq",
]


MAX_ENTRY_CHARS = MAX_ARGUMENTS_CHARS + 8_000 + MAX_APPROVERS * (MAX_ID_CHARS + 3)
"""The longest entry (as JSON text) a history takes: 89,900 characters, the longest
arguments (:data:`MAX_ARGUMENTS_CHARS`) and what a ``created`` entry keeps beside them: the
ids, the description, and the most approvers an approval lists
(:data:`~roomkit.models.json_limits.MAX_APPROVERS`), each as long as an id may be, quoted."""


def new_entry(
    kind: str, *, actor: str | None = None, surface: str | None = None, **fields: Any
) -> dict[str, Any]:
    """An entry of type ``kind`` made now (``seq`` is the store's to assign)."""
    return {"type": kind, "at": now_text(), "actor": actor, "surface": surface, **fields}


_spelled_second: tuple[int, str] = (-1, "")
"""The last whole second :func:`now_text` spelled, and its spelling up to the seconds
(replaced whole, so a thread reads one second's pair, never half of two)."""


def now_text() -> str:
    """The time now as an entry's ``at``: what :func:`entry_time` makes of
    ``datetime.now(UTC)``, the date and time of day spelled once a second, not per entry."""
    global _spelled_second
    second, micros = divmod(time.time_ns() // 1000, 1_000_000)
    spelled = _spelled_second
    if spelled[0] != second:
        spelled = (second, datetime.fromtimestamp(second, UTC).isoformat()[:19])
        _spelled_second = spelled
    if not micros:  # as isoformat does: no fraction for a whole second
        return f"{spelled[1]}Z"
    return f"{spelled[1]}.{micros:06d}Z"


_PLAIN = frozenset({str, int, float, bool, type(None)})


def detached(value: Any) -> Any:
    """``value`` (an entry, a call's arguments, one of their values) as it is now, sharing
    no list or object that its giver can change afterwards: a flat object or list copied
    as it is, anything deeper copied in full."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        if _PLAIN.issuperset(map(type, value.values())):
            return dict(value)
        return {key: detached(item) for key, item in value.items()}
    if kind is list:
        if _PLAIN.issuperset(map(type, value)):
            return list(value)
        return [detached(item) for item in value]
    return copy.deepcopy(value)


def entry_time(at: datetime) -> str:
    """``at`` as an entry's ``at``: ISO-8601 in UTC, ``Z`` for the offset."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def stamp_time(stamp: int) -> str:
    """``stamp`` (nanoseconds since the epoch, ``time.time_ns()``) as an entry's ``at``."""
    return entry_time(_EPOCH + timedelta(microseconds=stamp // 1000))


def asked_entry(request: PendingInput) -> dict[str, Any]:
    """The ``created`` entry of the question ``request``: what was asked (the tool, the
    arguments and their digest) of whom, in which room and channel, at its creation."""
    return {
        "type": "created",
        "at": entry_time(request.created_at),
        "actor": request.actor_id,
        "surface": None,
        "tool": request.tool_name,
        "digest": arguments_digest(request.tool_name, request.arguments),
        "arguments": request.arguments,
        "room": request.room_id,
        "channel": request.channel_id,
    }


def settled_entry(
    status: str,
    *,
    actor: str | None = None,
    surface: str | None = None,
    withdrawn: bool = False,
    reason: str | None = None,
) -> dict[str, Any]:
    """The ``settled`` entry of an outcome: its ``status`` (``resolved``, ``rejected``,
    ``timed_out``), who settled it and through which surface; ``withdrawn`` when the
    handler gave the request up rather than a person rejecting it, and ``reason`` why, when
    the caller said."""
    entry = new_entry("settled", actor=actor, surface=surface, status=status)
    if withdrawn:
        entry["withdrawn"] = True
    if reason is not None:
        entry["reason"] = reason
    return entry


def deadline_entry() -> dict[str, Any]:
    """The entry a store appends when it records a timeout in place of a late settle."""
    return settled_entry("timed_out")


def check_entries(entries: Sequence[object]) -> tuple[dict[str, Any], ...]:
    """``entries`` (a settle's ``history=``) as history entries, each checked.

    Raises:
        TypeError: ``entries`` is a dict or a string rather than a sequence of entries, or
            an entry is no entry (as :func:`check_entry`).
        ValueError, InvalidTextError: as :func:`check_entry`.
    """
    if type(entries) not in (list, tuple) and isinstance(entries, Mapping | str | bytes):
        raise TypeError("history= takes a sequence of history entries: pass [entry]")
    return tuple([check_entry(entry) for entry in entries])


def check_entry(entry: object) -> dict[str, Any]:
    """``entry`` (a dict, or a typed :class:`~roomkit.models.history.Entry`) as a history
    entry, with ``actor`` and ``surface`` filled in when missing.

    Raises:
        TypeError: ``entry`` is not a dict, or is not JSON-serialisable.
        ValueError: its ``type`` is not one of :data:`ENTRY_TYPES`, its ``at`` is missing,
            a field does not have the type its kind's model gives it
            (:mod:`roomkit.models.history`), or it is longer than :data:`MAX_ENTRY_CHARS`
            as JSON.
        InvalidTextError: a text in it holds a lone surrogate.
    """
    if isinstance(entry, Entry):
        entry = entry.to_dict()
    elif type(entry) is not dict and not isinstance(entry, Mapping):
        raise TypeError(f"a history entry is a dict, got {type(entry).__name__}")
    checked = dict(entry)
    model = ENTRY_MODELS.get(checked.get("type"))  # type: ignore[arg-type]
    if model is None:
        raise ValueError(
            f"a history entry's type is one of {sorted(ENTRY_TYPES)}, got {checked.get('type')!r}"
        )
    if not isinstance(checked.get("at"), str):
        raise ValueError("a history entry needs 'at', an ISO-8601 UTC time (see new_entry())")
    check_fields(model, checked)
    checked.setdefault("actor", None)
    checked.setdefault("surface", None)
    if _short_and_flat(checked):
        # ASCII texts, flags and nothing else: encodable, serialisable and short as it is.
        return checked
    # One encoding answers both looks: a text UTF-8 cannot encode shows in it, and its
    # length is the entry's. Only a failed look walks the entry, to say where and why.
    text = _encoded(checked)
    if text is None or not (text.isascii() or _utf8(text) is not None):
        problem = unencodable_text(checked)
        if problem is not None:
            raise InvalidTextError(f"a history entry cannot be stored: it holds {problem}")
        text = entry_text(checked)  # raises TypeError: the entry is no JSON
    if len(text) > MAX_ENTRY_CHARS:
        raise ValueError(f"a history entry is at most {MAX_ENTRY_CHARS} characters as JSON")
    return checked


def _encoded(entry: Mapping[str, Any]) -> str | None:
    """The entry as it is stored (:func:`entry_text`), or ``None`` when it is no JSON."""
    try:
        return _CANONICAL.encode(entry)
    except (TypeError, ValueError, RecursionError):
        return None


def _short_and_flat(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` holds only ASCII texts, ``None`` and bools, and is short whatever
    JSON makes of it (an escape spells a character in at most six)."""
    size = 2
    for key, value in entry.items():
        if type(key) is not str or not key.isascii():
            return False
        if type(value) is str:
            if not value.isascii():
                return False
            size += 6 * (len(key) + len(value)) + 6
        elif value is None or type(value) is bool:
            size += 6 * len(key) + 9
        else:
            return False
    return size <= MAX_ENTRY_CHARS


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""What :func:`entry_text` encodes with: ``json.dumps`` with these options makes one per call."""


def entry_text(entry: Mapping[str, Any]) -> str:
    """The entry as it is stored: compact JSON, keys sorted."""
    try:
        return _CANONICAL.encode(entry)
    except (TypeError, ValueError) as error:
        raise TypeError(f"a history entry must be JSON-serialisable: {error}") from None


def first_prev(pending_id: str) -> str:
    """The ``prev`` of a request's first entry: the SHA-256 hex digest of its id."""
    return hashlib.sha256(pending_id.encode("utf-8", "surrogatepass")).hexdigest()


def link_digest(text: str | bytes) -> str:
    """The SHA-256 hex digest of an entry's stored text: the next entry's ``prev``."""
    # A text no store writes (one read back from bytes that are not UTF-8, holding lone
    # surrogates) still has a digest, so a check names it instead of failing on it; every
    # text a store writes is UTF-8, and digests as such.
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.sha256(raw).hexdigest()


def chain_text(entry: Mapping[str, Any], pending_id: str, head: str | bytes | None) -> str:
    """The stored text of ``entry`` appended after ``head`` (the text of the request's last
    entry, ``None`` when it has none): ``entry`` with its ``prev``, without ``seq``."""
    return linked_text(entry, first_prev(pending_id) if head is None else link_digest(head))


def linked_text(entry: Mapping[str, Any], prev: str) -> str:
    """The stored text of ``entry`` appended after the entry whose digest is ``prev`` (for
    the first entry, :func:`first_prev` of the request's id)."""
    linked = dict(entry)
    linked.pop("seq", None)
    linked["prev"] = prev
    return entry_text(linked)


def chain_texts(
    entries: Sequence[Mapping[str, Any]], pending_id: str, head: str | bytes | None
) -> list[str]:
    """The stored texts of ``entries`` appended one after another after ``head``."""
    return linked_texts(entries, first_prev(pending_id) if head is None else link_digest(head))


def linked_texts(entries: Sequence[Mapping[str, Any]], prev: str) -> list[str]:
    """The stored texts of ``entries`` appended one after another after the entry whose
    digest is ``prev``."""
    return linked_chain(entries, prev)[0]


def linked_chain(entries: Sequence[Mapping[str, Any]], prev: str) -> tuple[list[str], str]:
    """As :func:`linked_texts`, and the digest of the last text (``prev`` for no entries):
    the ``prev`` of whatever comes next, so that whoever keeps the head need not digest
    that text again."""
    texts: list[str] = []
    for entry in entries:
        text = linked_text(entry, prev)
        texts.append(text)
        prev = link_digest(text)
    return texts, prev


def broken_link(pending_id: str, texts: Sequence[str | bytes]) -> tuple[int, str] | None:
    """Where the chain of ``texts`` (a request's stored entries, oldest first) breaks: the
    ``seq`` of the first entry that is not what was appended, and why; ``None`` if whole."""
    expected = first_prev(pending_id)
    for seq, text in enumerate(texts):
        raw = _utf8(text)
        if raw is None:
            return seq, _NOT_UTF8
        entry = _object(raw)
        if isinstance(entry, str):
            return seq, entry
        if entry.get("prev") != expected:
            return seq, "its prev is not the digest of the entry before it"
        if entry_text(entry) != raw:
            return seq, "its text is not the canonical JSON it was stored as"
        expected = link_digest(text)
    return None


_NOT_UTF8 = "it is not UTF-8 text"
"""Why an entry stored as bytes that are not UTF-8 (or read back holding lone surrogates)
is no entry."""


def _object(raw: str) -> dict[str, Any] | str:
    """The JSON object ``raw`` holds; when it holds none, why, as :func:`broken_link`
    says it."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return "it is not JSON"
    except RecursionError:
        return "it is JSON nested too deeply to read"
    if not isinstance(entry, dict):
        return "it is not a JSON object"
    return entry


def _utf8(text: str | bytes) -> str | None:
    """``text`` as UTF-8 text, ``None`` when it is none: bytes that do not decode, or a
    text holding lone surrogates (a store that read such bytes back kept them so)."""
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


def read_entry(text: str | bytes, seq: int, *, pending_id: str | None = None) -> dict[str, Any]:
    """The entry stored as ``text`` at position ``seq`` (of the history of ``pending_id``,
    which an error names).

    Raises:
        CorruptRecordError: ``text`` is no entry a store writes: bytes that are not UTF-8,
            text that is not JSON, JSON nested too deeply to read, or no JSON object (left by
            a damaged disk, or by another hand with write access to the store).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise _unreadable(pending_id, seq, _NOT_UTF8) from None
    entry = _object(text)
    if isinstance(entry, str):
        raise _unreadable(pending_id, seq, entry)
    entry["seq"] = seq
    return entry


def stored_seq(value: object, pending_id: str) -> int:
    """An entry's ``seq`` as the store kept it in a number column, which SQLite lets a hand
    edit leave holding text, bytes or a fraction.

    Raises:
        CorruptRecordError: ``value`` is no whole number: the request's history cannot be
            read or appended to until its entries are numbered again.
    """
    if type(value) is int:
        return value
    shown = repr(value)
    if len(shown) > 40:
        shown = f"{shown[:37]}..."
    raise CorruptRecordError(
        f"the history of {pending_id!r} cannot be read: an entry is numbered {shown}, not "
        "a whole number; roomkit did not write it so (`roomkit audit verify` names what "
        "breaks the trail)"
    )


def _unreadable(pending_id: str | None, seq: int, why: str) -> CorruptRecordError:
    whose = "a history" if pending_id is None else f"the history of {pending_id!r}"
    return CorruptRecordError(
        f"{whose} cannot be read at entry {seq}: {why}; roomkit did not write it so "
        "(`roomkit audit verify` names what breaks the trail)"
    )

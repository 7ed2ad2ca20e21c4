"""One flat encoding of a request, shared by the durable stores.

Every field is a string, a number or ``None``, so a SQLite row and a Redis hash hold the
same record; ``arguments``, ``answer_schema`` and ``approvers`` travel as JSON text.
``format`` marks a record this library wrote: anything else at a store's key is reported,
never trusted. Fields added since the first version read as a question's defaults when a
record lacks them.

A SQLite row holds ``None`` as NULL. A Redis hash cannot, so it holds the marker
:data:`NONE` (one NUL character) instead, and every text field that may be ``None`` goes
through :func:`marked` on the way in and :func:`unmarked` on the way out: a text made of NUL
characters only is stored with one NUL more, so that no text reads back as ``None``. (A
Redis record written before this rule with such a text, two NULs or more, reads back one
NUL shorter.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._quorum import decode_votes, encode_votes

__all__ = [
    "APPROVAL_FIELDS",
    "FIELDS",
    "FIRST_FIELDS",
    "FORMAT",
    "NONE",
    "OPTIONAL_TEXTS",
    "QUORUM_FIELDS",
    "decode",
    "encode",
    "encode_hash",
    "marked",
    "names_text",
    "read_names",
    "unmarked",
]

FORMAT = "roomkit.pending.v1"

FIELDS = (
    "format",
    "pending_id",
    "tool_name",
    "arguments",
    "room_id",
    "tool_call_id",
    "channel_id",
    "status",
    "result",
    "reject_reason",
    "detached",
    "created_at",
    "actor_id",
    "channel_type",
    "withdrawn",
    "deadline",
    "key",
    "answer_schema",
    "settled_by",
    "kind",
    "arguments_digest",
    "approvers",
    "quorum",
    "veto",
    "voters",
    "votes",
)
"""The encoded fields, in column order."""

FIRST_FIELDS = FIELDS[:19]
"""The fields of the first version, before approvals (``kind`` and after): a store made
then lacks the others, and its records read as questions."""

APPROVAL_FIELDS = FIELDS[19:22]
"""The fields approvals added (``kind``, ``arguments_digest``, ``approvers``)."""

QUORUM_FIELDS = FIELDS[22:]
"""The fields quorums added (``quorum``, ``veto``, ``voters``, ``votes``): a record without
them reads as an approval any one approver decides."""

OPTIONAL_TEXTS = frozenset(
    {"result", "reject_reason", "actor_id", "key", "settled_by", "arguments_digest"}
)
"""The text fields that may be ``None``: a Redis hash holds them :func:`marked`."""

NONE = "\x00"
"""How a store that cannot hold ``None`` (a Redis hash) writes it."""

Scalar = str | int | float | None

_COMPACT = json.JSONEncoder(separators=(",", ":"))
"""What the JSON fields are written with: ``json.dumps`` with these options makes one per
call."""


def encode(request: PendingInput) -> dict[str, Scalar]:
    """The request as flat fields; ``detached`` and ``withdrawn`` as 0/1."""
    return {
        "format": FORMAT,
        "pending_id": request.pending_id,
        "tool_name": request.tool_name,
        "arguments": _COMPACT.encode(request.arguments),
        "room_id": request.room_id,
        "tool_call_id": request.tool_call_id,
        "channel_id": request.channel_id,
        "status": request.status.value,
        "result": request.result,
        "reject_reason": request.reject_reason,
        "detached": int(request.detached),
        "created_at": request.created_at.isoformat(),
        "actor_id": request.actor_id,
        "channel_type": request.channel_type.value,
        "withdrawn": int(request.withdrawn),
        "deadline": request.deadline,
        "key": request.key,
        "answer_schema": (
            None if request.answer_schema is None else _COMPACT.encode(request.answer_schema)
        ),
        "settled_by": request.settled_by,
        "kind": request.kind,
        "arguments_digest": request.arguments_digest,
        "approvers": names_text(request.approvers),
        "quorum": request.quorum,
        "veto": int(request.veto),
        "voters": names_text(request.voters),
        "votes": encode_votes(request.votes),
    }


def encode_hash(request: PendingInput) -> dict[str, str | int | float]:
    """The request as a Redis hash holds it: :func:`encode`'s fields with no ``None``.

    A text that may be ``None`` is :func:`marked`, any other ``None`` is :data:`NONE`, and
    a missing answer schema is empty JSON text.
    """
    hashed = {name: NONE if value is None else value for name, value in encode(request).items()}
    for name in OPTIONAL_TEXTS:
        hashed[name] = marked(getattr(request, name))
    if request.answer_schema is None:
        hashed["answer_schema"] = ""
    return hashed


def marked(value: str | None) -> str:
    """``value`` as a store that cannot hold ``None`` writes it; :func:`unmarked` undoes it."""
    if value is None:
        return NONE
    if value and not value.strip(NONE):
        return value + NONE
    return value


def unmarked(value: str) -> str | None:
    """The text (or ``None``) that :func:`marked` wrote as ``value``."""
    if value == NONE:
        return None
    if value and not value.strip(NONE):
        return value[1:]
    return value


def decode(fields: Mapping[str, Any], *, hashed: bool = False) -> PendingInput:
    """Rebuild a request from :func:`encode`'s fields (bytes or text values).

    ``hashed``: the fields come from a Redis hash, whose texts that may be ``None`` are
    :func:`marked`.

    Raises:
        CorruptRecordError: the record is foreign, truncated or unreadable; the message
            names the record and the field.
    """
    values = fields
    if bytes in set(map(type, fields)) or bytes in set(map(type, fields.values())):
        values = {
            (name.decode() if isinstance(name, bytes) else name): (
                value.decode() if isinstance(value, bytes) else value
            )
            for name, value in fields.items()
        }
    pending_id = values.get("pending_id")
    where = f"pending record {pending_id!r}" if pending_id else "a pending record"
    if values.get("format") != FORMAT:
        raise CorruptRecordError(
            f"{where} is not a {FORMAT} record (format={values.get('format')!r})"
        )
    optional = _unmark if hashed else _optional
    read: dict[str, Any] = {}
    field = "?"
    try:
        for field, required, reader in _READERS:
            read[field] = reader(values[field] if required else values.get(field))
        field = "pending_id"
        return PendingInput(
            pending_id=_text(values["pending_id"]),
            tool_name=_text(values["tool_name"]),
            room_id=_text(values["room_id"]),
            tool_call_id=_text(values["tool_call_id"]),
            channel_id=_text(values["channel_id"]),
            result=optional(values.get("result")),
            reject_reason=optional(values.get("reject_reason")),
            actor_id=optional(values.get("actor_id")),
            key=optional(values.get("key")),
            settled_by=optional(values.get("settled_by")),
            arguments_digest=optional(values.get("arguments_digest")),
            **read,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CorruptRecordError(f"{where}: field {field!r} is unreadable ({error})") from None


def names_text(names: tuple[str, ...]) -> str:
    """A list of actor ids (approvers, voters) as a record holds it: compact JSON text."""
    return _COMPACT.encode(list(names)) if names else "[]"


def read_names(value: object) -> tuple[str, ...]:
    """The actor ids :func:`names_text` wrote (none for a missing field).

    Raises:
        TypeError, ValueError: the text is not a JSON list of actor ids.
    """
    return _approvers(value)


def _approvers(value: object) -> tuple[str, ...]:
    if value is None or value in _NO_NAMES:
        return ()
    names = json.loads(_text(value))
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise TypeError("not a JSON list of actor ids")
    return tuple(names)


_NO_NAMES = frozenset({"", NONE, "[]"})
"""The texts of an empty list of names: a missing field's, and the one written."""


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def _optional(value: object) -> str | None:
    return None if value is None else _text(value)


def _unmark(value: object) -> str | None:
    return None if value is None else unmarked(_text(value))


def _number(value: object) -> float | None:
    if value is None or value in ("", NONE):
        return None
    return float(value)  # type: ignore[arg-type]


def _arguments(value: object) -> dict[str, Any]:
    arguments = json.loads(value)  # type: ignore[arg-type]
    if not isinstance(arguments, dict):
        raise TypeError("not a JSON object")
    return arguments


def _schema(value: object) -> Any:
    return None if value in (None, "", NONE) else json.loads(value)  # type: ignore[arg-type]


def _flag(value: object) -> bool:
    return bool(int(value))  # type: ignore[call-overload]


def _count(value: object) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _veto(value: object) -> bool:
    return True if value in (None, "", NONE) else _flag(value)


def _kind(value: object) -> str:
    return "question" if value in (None, "", NONE) else _text(value)


_READERS: tuple[tuple[str, bool, Callable[[Any], Any]], ...] = (
    ("arguments", True, _arguments),
    ("answer_schema", False, _schema),
    ("status", True, PendingInputStatus),
    ("channel_type", True, ChannelType),
    ("created_at", True, datetime.fromisoformat),
    ("deadline", False, _number),
    ("detached", True, _flag),
    ("withdrawn", True, _flag),
    ("approvers", False, _approvers),
    ("quorum", False, _count),
    ("veto", False, _veto),
    ("voters", False, _approvers),
    ("votes", False, decode_votes),
    ("kind", False, _kind),
)
"""The fields :func:`decode` reads in order (a missing one is unreadable when it is
required), each with its reader; the rest are texts."""

"""Recovery: tool calls a realtime model spoke instead of making.

Some speech-to-speech models, asked to call a tool, say it: the transcript of their turn
carries ``call:name{key:value,...}``. The parser here finds those calls in the model's
transcripts and reads their arguments tolerantly: the braces may hold a JSON object, or
``key: value`` pairs (``=`` works too) whose keys may be quoted or bare and whose values may be
quoted strings, numbers, ``true`` / ``false`` / ``null``, nested JSON, or bare text. What it
cannot read (nesting deeper than it goes included) is skipped, never guessed. The arguments
are only read here: the call goes through the same validation and gate as any other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["RecoveredCall", "parse_arguments", "recover_calls"]

_START = re.compile(r"call:\s*([A-Za-z_][\w.\-]*)\s*\{")
_KEY = re.compile(
    r"""\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([A-Za-z_][\w.\-]*))\s*[:=]\s*"""
)
# Where a bare value stops: at the comma that starts the next ``key:`` pair.
_NEXT_PAIR = re.compile(r""",\s*(?:"[^"]*"|'[^']*'|[A-Za-z_][\w.\-]*)\s*[:=]""")
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_QUOTES = "\"'"


@dataclass(frozen=True, slots=True)
class RecoveredCall:
    """A call found in a transcript."""

    name: str
    """The tool named after ``call:``."""
    arguments: dict[str, Any]
    """The arguments read from the braces."""


def recover_calls(text: str) -> list[RecoveredCall]:
    """Every readable ``call:name{...}`` in ``text``, in order."""
    calls = []
    pos = 0
    while (match := _START.search(text, pos)) is not None:
        opening = match.end() - 1
        closing = _closing(text, opening)
        if closing is None:
            break
        arguments = parse_arguments(text[opening + 1 : closing])
        if arguments is not None:
            calls.append(RecoveredCall(match.group(1), arguments))
        pos = closing + 1
    return calls


def parse_arguments(body: str) -> dict[str, Any] | None:
    """The arguments inside the braces of a spoken call, or ``None`` when unreadable."""
    try:
        return _arguments(body)
    except RecursionError:
        # Nested deeper than the parser goes: unreadable, like any other.
        return None


def _arguments(body: str) -> dict[str, Any] | None:
    try:
        value = json.loads("{" + body + "}")
    except ValueError:
        pass
    else:
        if isinstance(value, dict):
            return value
    try:
        return _pairs(body)
    except _UnreadableError:
        return None


class _UnreadableError(ValueError):
    """The braces hold something the parser will not guess at."""


def _pairs(body: str) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    pos, end = 0, len(body)
    while True:
        while pos < end and (body[pos].isspace() or body[pos] == ","):
            pos += 1
        if pos >= end:
            return arguments
        key = _KEY.match(body, pos)
        if key is None:
            raise _UnreadableError(body[pos:])
        name = next(group for group in key.groups() if group is not None)
        arguments[name], pos = _value(body, key.end())


def _value(body: str, pos: int) -> tuple[Any, int]:
    if pos >= len(body):
        return "", pos
    first = body[pos]
    if first in _QUOTES:
        last = _string_end(body, pos)
        if last is None:
            raise _UnreadableError(body[pos:])
        return _unquote(body[pos : last + 1]), last + 1
    if first in "{[":
        last = _closing(body, pos)
        if last is not None:
            return _nested(body[pos : last + 1]), last + 1
    following = _NEXT_PAIR.search(body, pos)
    stop = following.start() if following is not None else len(body)
    return _scalar(body[pos:stop].strip()), stop


def _nested(segment: str) -> Any:
    try:
        return json.loads(segment)
    except ValueError:
        if segment.startswith("{"):
            inner = _arguments(segment[1:-1])
            if inner is not None:
                return inner
        return segment


def _scalar(raw: str) -> Any:
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
    return raw


def _unquote(literal: str) -> str:
    if literal[0] == '"':
        try:
            value = json.loads(literal)
        except ValueError:
            return literal[1:-1]
        return value if isinstance(value, str) else literal[1:-1]
    return literal[1:-1].replace("\\'", "'").replace("\\\\", "\\")


def _string_end(text: str, start: int) -> int | None:
    """The index of the quote closing the string that opens at ``start``, or ``None``."""
    quote, pos = text[start], start + 1
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char == quote:
            return pos
        pos += 1
    return None


def _opens_string(text: str, pos: int) -> bool:
    pos -= 1
    while pos >= 0 and text[pos].isspace():
        pos -= 1
    return pos < 0 or text[pos] in "{[,:="


def _closing(text: str, start: int) -> int | None:
    """The index of the bracket closing the one at ``start``, or ``None``.

    Brackets inside quoted strings do not count. A quote opens a string only where a value
    or a key starts (after a bracket, a comma, ``:`` or ``=``): elsewhere it is an apostrophe.
    """
    depth, pos = 0, start
    while pos < len(text):
        char = text[pos]
        if char in _QUOTES and _opens_string(text, pos):
            last = _string_end(text, pos)
            if last is not None:
                pos = last + 1
                continue
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return pos
        pos += 1
    return None

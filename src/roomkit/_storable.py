"""JSON values no store can carry: text UTF-8 cannot encode, numbers JSON has no form for,
values and keys that are no JSON at all, and a container that holds itself.

Every value a person or a model hands in (a call's arguments, an answer, a history entry) is
looked at here before it is stored or sent on. Each walk keeps its own stack, so any depth is
fine, and looks at each dict and list once, so a value that holds itself ends the walk instead
of running it forever.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from roomkit.models.json_limits import (
    MAX_ARGUMENTS_CHARS,
    MAX_ARGUMENTS_DEPTH,
    TOP,
    Path,
    circular_at,
    path_text,
    with_paths,
)
from roomkit.models.shown import shown

__all__ = [
    "circular_at",
    "non_finite_at",
    "non_json_at",
    "path_text",
    "replaced_surrogates",
    "storable_as_is",
    "unencodable_text",
]


# -- text UTF-8 cannot encode ------------------------------------------------------------------


def unencodable_text(value: object) -> str | None:
    """Where ``value`` holds text that UTF-8 cannot encode, or ``None`` if it holds none.

    Strings are checked, and the keys and values of dicts and the items of lists and
    tuples, to any depth. Every string Python holds encodes but one with a lone surrogate
    (``"\\ud800"``), which ``json.loads`` makes of the escape ``"\\ud800"``.

    Returns:
        ``None`` when every string encodes, else where the first one that does not is,
        worded for a message and itself encodable: ``"a lone surrogate (U+D800) at
        character 3 of 'questions[0].question'"``.
    """
    # The common cases first: a short ASCII text (a typed decision is one too), a flat
    # object of ASCII texts, numbers, flags and nulls.
    if isinstance(value, str):
        if value.isascii():
            return None
    elif type(value) is dict:
        nested = False
        for key, child in value.items():
            if type(key) is not str or not key.isascii():
                break
            kind = type(child)
            if kind is str:
                if not child.isascii():
                    break
            elif kind not in _NO_TEXT:
                nested = kind in _NESTED
                break
        else:
            return None
        # An object one level deeper (a record's view: lists of ids, a tool's arguments),
        # still without the walk; one that stopped on a text other than ASCII goes to it.
        if nested and _ascii_shallow(value):
            return None
    if _encodable(value):
        return None
    return _locate(value)


def _ascii_flat(items: Iterable[object]) -> bool:
    """Whether each item is ASCII text, a number, a flag or ``None``."""
    for item in items:
        if type(item) is str:
            if not item.isascii():
                return False
        elif type(item) not in _NO_TEXT:
            return False
    return True


def _ascii_shallow(value: dict[Any, Any]) -> bool:
    """Whether ``value`` holds only ASCII texts, numbers, flags and ``None``, in its keys, its
    values and the items (and keys) of the lists and objects among them."""
    children = value.values()
    return (
        _ascii_flat(value)
        and _ascii_flat(child for child in children if type(child) not in _NESTED)
        and all(
            _ascii_flat(child) and (type(child) is not dict or _ascii_flat(child.values()))
            for child in children
            if type(child) in _NESTED
        )
    )


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_NO_TEXT = frozenset({int, float, bool, type(None)})
"""The exact types of JSON values that hold no text."""

_NESTED = frozenset({dict, list, tuple})
"""The exact types of JSON values that hold others."""


def _encodable(value: object) -> bool:
    """Whether every string in ``value`` encodes (no recursion: any depth is fine)."""
    stack = [value]
    pop, push, extend = stack.pop, stack.append, stack.extend
    seen: set[int] = set()
    while stack:
        item = pop()
        if type(item) in _NO_TEXT:
            continue
        if isinstance(item, str):
            if not item.isascii() and not _encodes(item):
                return False
        elif isinstance(item, dict | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, dict):
                for key, child in item.items():
                    push(key)
                    push(child)
            else:
                extend(item)
    return True


def _locate(value: object) -> str | None:
    """The wording of :func:`unencodable_text` for the first string that does not encode."""
    for item, path in with_paths(value):
        if isinstance(item, str):
            if not _encodes(item):
                return _surrogate_at(item, path)
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and not _encodes(key):
                    where = f" in {path_text(path)!r}" if path else ""
                    return f"{_surrogate_at(key, TOP)} of a key{where}"
    return None


_NO_FLOAT = frozenset({str, int, bool, type(None)})
"""The kinds of a flat object's values that hold no number JSON cannot carry."""


def non_finite_at(value: object) -> str | None:
    """Where ``value`` holds a number JSON cannot carry (NaN, an infinity), worded for a
    message (``"nan at 'width'"``), or ``None`` if it holds none."""
    # The common case first: a flat object of texts, whole numbers, flags and nulls.
    if type(value) is dict and all(type(child) in _NO_FLOAT for child in value.values()):
        return None
    for item, path in with_paths(value):
        if type(item) is float and (item != item or item in (math.inf, -math.inf)):
            return f"{item!r} at {path_text(path)!r}" if path else repr(item)
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def replaced_surrogates(value: Any) -> Any:
    """A copy of ``value`` with U+FFFD (the replacement character) in place of each lone
    surrogate, in its texts and keys. Unlike the walks above it recurses: it is given only
    values as deep as ``json.loads`` reads (a model's response, a recorded decision)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {
            replaced_surrogates(key): replaced_surrogates(child) for key, child in value.items()
        }
    if isinstance(value, list | tuple):
        return [replaced_surrogates(child) for child in value]
    return value


def _surrogate_at(text: str, path: Path) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        at = error.start
    else:  # pragma: no cover - only called for text that does not encode
        at = 0
    where = f" of {path_text(path)!r}" if path else ""
    return f"a lone surrogate (U+{ord(text[at]):04X}) at character {at}{where}"


# -- values and keys JSON has no form for -----------------------------------------------------

_FLAT = frozenset({str, int, float, bool, type(None)})
"""The exact types of JSON values that hold no other value."""

_JSON = (str, int, float, dict, list, tuple)
"""What JSON writes (with ``None``): a bool is an int, a tuple is written as a list."""


def non_json_at(value: object) -> str | None:
    """Where ``value`` holds what JSON has no form for, worded for a message (``"a value of
    type bytes at 'q[0].b'"``, ``"a key of type int (1) in 'q'"``), or ``None`` if it holds
    none.

    Every value must be text, a number, a flag, ``None``, a dict or a list (or tuple), and
    every key of a dict text: a durable store keeps the value as JSON, which would refuse
    the value, or silently turn the key ``1`` into ``"1"``.
    """
    if _json_only(value):
        return None
    for item, path in with_paths(value):
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    where = f"in {path_text(path)!r}" if path else "at the top level"
                    return f"a key of type {type(key).__name__} ({shown(key, limit=60)}) {where}"
        elif item is not None and not isinstance(item, _JSON):
            where = f"at {path_text(path)!r}" if path else "at the top level"
            return f"a value of type {type(item).__name__} {where}"
    return None  # pragma: no cover - only called for a value _json_only refused


def _json_only(value: object) -> bool:
    """Whether every value in ``value`` is JSON and every key text (no recursion)."""
    stack = [value]
    pop, push, extend = stack.pop, stack.append, stack.extend
    seen: set[int] = set()
    while stack:
        item = pop()
        kind = type(item)
        if kind in _FLAT:
            continue
        if isinstance(item, dict):
            if id(item) in seen:
                continue
            seen.add(id(item))
            for key, child in item.items():
                if not isinstance(key, str):
                    return False
                push(child)
        elif isinstance(item, list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            extend(item)
        elif not isinstance(item, _JSON):
            return False
    return True


# -- all of it at once -------------------------------------------------------------------------

_SHORT = 10**20
"""Integers inside ``(-_SHORT, _SHORT)`` are at most 21 characters as JSON."""
_SCALAR_ROOM = 25
"""At least the JSON of a float, a short integer, a flag or null, with its separator."""
_INFINITIES = (math.inf, -math.inf)


def storable_as_is(arguments: object) -> bool:
    """Whether ``arguments`` are, beyond doubt, what every store keeps and every check of a
    call's arguments passes: a dict of dicts, lists, texts UTF-8 encodes, finite floats,
    integers shorter than 21 digits, flags and nulls, keyed by texts, no deeper than
    :data:`~roomkit.models.json_limits.MAX_ARGUMENTS_DEPTH` levels and sure to be no longer
    as JSON than :data:`~roomkit.models.json_limits.MAX_ARGUMENTS_CHARS`.

    One walk without paths, for the common case: ``False`` says only that the checks that
    say what is wrong, and where, must look (a tuple, a subclass, a long text or a large
    integer may well pass them). A value inside itself nests past the depth, and one shared
    by many paths runs out of room: the walk ends either way.
    """
    if type(arguments) is not dict:
        return False
    room = MAX_ARGUMENTS_CHARS - 2  # the braces
    stack: list[tuple[dict[object, object] | list[object], int]] = [(arguments, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        container, level = pop()
        values: Iterable[object] = container
        if type(container) is dict:
            for key in container:
                if type(key) is not str:
                    return False
                room -= 6 * len(key) + 3  # escaped, quoted, and a colon
                if not key.isascii() and not _encodes(key):
                    return False
            values = container.values()
        else:
            room -= len(container)  # the commas
        for item in values:
            kind = type(item)
            if kind is str:
                text: str = item  # type: ignore[assignment]
                room -= 6 * len(text) + 3  # escaped, quoted, and a comma
                if not text.isascii() and not _encodes(text):
                    return False
            elif kind is dict or kind is list:
                if level == MAX_ARGUMENTS_DEPTH:
                    return False
                room -= 2
                push((item, level + 1))  # type: ignore[arg-type]
            elif kind is int:
                if not -_SHORT < item < _SHORT:  # type: ignore[operator]
                    return False
                room -= _SCALAR_ROOM
            elif kind is float:
                if item != item or item in _INFINITIES:
                    return False
                room -= _SCALAR_ROOM
            elif kind is bool or item is None:
                room -= _SCALAR_ROOM
            else:
                return False
        if room < 0:
            return False
    return True

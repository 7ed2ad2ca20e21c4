"""Whether a grant's regular expressions match in time on any arguments.

A grant's schema is checked against the caller's arguments with Python's backtracking
``re`` (``pattern``, and ``patternProperties`` on the names of properties): a pattern such
as ``^(a+)+$`` takes longer than any deadline on a string the caller chooses, and ``re``
holds the interpreter while it runs, so no time limit can cut it. A grant's patterns are
therefore kept to a shape whose matching is linear in the string, checked when the grant is
made (and again when it is used, for a grant stored before):

- anchored at the start (``^`` or ``\\A``, and no ``(?m)``): a match is tried at one place;
- at most one repeat that grows with the string (``*``, ``+``, ``{2,}``, or a range wider
  than :data:`SPAN`), and every repeat of more than one item repeats one character (a
  literal, ``.``, a class such as ``[a-z]`` or ``\\d``): a repeated group is refused;
- the other choices (``?``, ``{1,3}``, alternatives) multiply to at most :data:`CHOICES`;
- no backreference, lookahead or lookbehind.

Every object of the schema is looked at, not only those its draft's keywords hold: a ``$ref``
may point anywhere in the document (into an ``examples`` value, a ``const``), and the
validator reads what it finds there as a schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# The parser ``re`` compiles with: the one place a pattern's structure can be read.
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

__all__ = ["CHOICES", "SPAN", "pattern_problem", "schema_pattern_problem"]

SPAN = 16
"""The widest range of counts a repeat may take without counting as growing."""

CHOICES = 1024
"""The most ways the bounded repeats and alternatives of one pattern may be combined."""

_ANCHORS = ((sre.AT, sre.AT_BEGINNING), (sre.AT, sre.AT_BEGINNING_STRING))
_ONE_CHARACTER = frozenset({sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.CATEGORY})
_REPEATS = frozenset({sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)})
_REFUSED = {
    sre.GROUPREF: "a backreference",
    sre.GROUPREF_EXISTS: "a conditional group",
    sre.ASSERT: "a lookahead or lookbehind",
    sre.ASSERT_NOT: "a lookahead or lookbehind",
}


class _Unsafe(Exception):
    """What makes a pattern's matching slow on some string."""


def pattern_problem(pattern: str) -> str | None:
    """Why matching ``pattern`` may take longer than linear time; ``None`` when it cannot."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as error:
        return f"{pattern!r} is not a regular expression ({error})"
    try:
        if parsed.state.flags & re.MULTILINE:
            raise _Unsafe("(?m) lets ^ match at every line")
        items = list(parsed)
        if not items or items[0] not in _ANCHORS:
            raise _Unsafe("it is not anchored at the start: begin it with ^")
        growing, choices = _walk(items)
    except _Unsafe as unsafe:
        return f"{pattern!r} may match too slowly: {unsafe}"
    if growing > 1:
        return (
            f"{pattern!r} may match too slowly: it has {growing} repeats that grow with the "
            "string (*, +, {n,}); keep one"
        )
    if choices > CHOICES:
        return f"{pattern!r} may match too slowly: its optional parts combine {choices} ways"
    return None


def _walk(items: Any) -> tuple[int, int]:
    """The growing repeats in ``items``, and how many ways its other choices combine.

    Raises:
        _Unsafe: ``items`` holds what the shape refuses.
    """
    growing, choices = 0, 1
    for op, value in items:
        if op in _REFUSED:
            raise _Unsafe(f"it holds {_REFUSED[op]}")
        if op in _REPEATS:
            low, high, body = value
            body = list(body)
            if high > 1 and not (len(body) == 1 and body[0][0] in _ONE_CHARACTER):
                raise _Unsafe("it repeats a group: repeat one character or class")
            inner_growing, inner_choices = _walk(body)
            growing += inner_growing
            if high == sre.MAXREPEAT or high - low > SPAN:
                growing += 1
            else:
                choices *= (high - low + 1) * inner_choices
        elif op == sre.SUBPATTERN:
            inner_growing, inner_choices = _walk(value[-1])
            growing, choices = growing + inner_growing, choices * inner_choices
        elif op == sre.BRANCH:
            ways = 0
            for branch in value[1]:
                inner_growing, inner_choices = _walk(branch)
                growing, ways = growing + inner_growing, ways + inner_choices
            choices *= ways
        elif op == sre.ATOMIC_GROUP:
            inner_growing, inner_choices = _walk(value)
            growing, choices = growing + inner_growing, choices * inner_choices
        choices = min(choices, CHOICES + 1)
    return growing, choices


def schema_pattern_problem(schema: Any) -> str | None:
    """Why a pattern of ``schema`` (``pattern``, a ``patternProperties`` name) may match too
    slowly, worded for the person granting; ``None`` when none may."""
    for pattern in _patterns(schema):
        problem = pattern_problem(pattern)
        if problem is not None:
            return f"the grant's schema holds a pattern that arguments could make hang: {problem}"
    return None


def _patterns(schema: Any) -> Iterator[str]:
    """Every ``pattern`` and ``patternProperties`` name of every object within ``schema``."""
    pending, seen = [schema], set()
    while pending:
        value = pending.pop()
        if not isinstance(value, dict | list) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, list):
            pending.extend(value)
            continue
        if isinstance(value.get("pattern"), str):
            yield value["pattern"]
        named = value.get("patternProperties")
        if isinstance(named, dict):
            yield from (str(name) for name in named)
        pending.extend(value.values())

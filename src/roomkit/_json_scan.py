"""Measuring JSON text without parsing it: how deep it nests, and its longest number.

:mod:`roomkit.bodies` runs these scans over a body before the parser sees it, so that no
body reaches the parser's recursion limit or its slow conversion of a huge number. Every
step runs in C over the whole text, and nothing recurses.
"""

from __future__ import annotations

import re
from itertools import accumulate

__all__ = ["depth_over", "json_depth", "longest_number", "outside_strings"]

_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_RUNS = re.compile(rb"\[+|\]+")
_DIGITS = frozenset(b"0123456789")
_NUMBER_MARKS = bytes(ord("9") if byte in b"-+.0123456789eE" else ord(" ") for byte in range(256))


def outside_strings(data: bytes) -> bytes:
    """The text of ``data`` that is not in a string: what nests, and the numbers.

    Every step runs in C over the whole text, and nothing recurses. The escaped backslashes
    go first, then the escaped quotes: the quotes left are where strings start and end, so
    the result is exact for valid JSON. (Outside a string a backslash stops the parser where
    it stands: what becomes of the text after it is never parsed.) A string left open runs
    to the end, as it does for the parser.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(data.split(b'"')[::2])


def _deepest(brackets: bytes) -> int:
    """The highest count of ``[`` over ``]`` along ``brackets``, one step per run of either."""
    steps = (len(run) if run[0] == ord("[") else -len(run) for run in _RUNS.findall(brackets))
    return max(accumulate(steps), default=0)


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in ``text``, found without recursion.

    Strings are skipped; the text need not be valid JSON (a closing bracket too many counts
    down as it comes).
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return _deepest(outside_strings(data).translate(_ONE_KIND, _NOT_BRACKETS))


def depth_over(outside: bytes, limit: int) -> int | None:
    """How deep the text nests when that is deeper than ``limit``, else ``None``: a few
    passes for a body within the limit, one count for one past it."""
    brackets = left = outside.translate(_ONE_KIND, _NOT_BRACKETS)
    # Each pass takes out the innermost pairs: what is left after ``limit`` passes is deeper.
    for _ in range(limit):
        if b"]" not in left:  # nothing closes: no pair to take out (the commonest attack)
            break
        shorter = left.replace(b"[]", b"")
        if len(shorter) == len(left):
            break
        left = shorter
    if not left:
        return None
    # Something is left: deeper, or brackets that do not pair, which only the count tells.
    depth = _deepest(brackets)
    return depth if depth > limit else None


def longest_number(outside: bytes, longest: int) -> int | None:
    """The length of the first number literal over ``longest`` characters, else ``None``.

    The characters of numbers are marked ``9`` and every other one a space, so that a C
    search for ``longest + 1`` nines finds the first run too long.
    """
    marked = outside.translate(_NUMBER_MARKS)
    too_long = b"9" * (longest + 1)
    start = marked.find(too_long)
    while start != -1:
        end = marked.find(b" ", start)
        end = len(marked) if end == -1 else end
        if _DIGITS.intersection(outside[start:end]):  # not "eee...": no number, the parser says
            return end - start
        start = marked.find(too_long, end)
    return None

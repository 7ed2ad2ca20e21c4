"""Hostile JSON for the fuzz runs: a valid body with one part of it made an attack.

:func:`hostile_text` takes a value a schema generated (so the rest of the body still reaches
the real checks) and writes it as JSON text with one of: nesting far past any limit, a
number literal too long for ``int()`` or beyond a float, ``NaN``, a lone surrogate, NUL
(escaped, or raw where JSON forbids it), a key given twice, or a key that is itself one of
those strings. Text, not a value: a key twice, ``1e999`` or 5,000 digits cannot be written
by ``json.dumps``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import strategies as st


class Raw(str):
    """JSON text written as it is."""


class Pairs(list[tuple[Any, Any]]):
    """An object as its pairs, so that a key may come twice."""


def _deep(depth: int, shape: str) -> str:
    if shape == "arrays":
        return "[" * depth + "]" * depth
    if shape == "objects":
        return '{"a":' * depth + "0" + "}" * depth
    return "[" * depth  # never closed: the parser recurses before it finds out


DEEP = st.builds(
    _deep, st.sampled_from([33, 65, 1_000, 50_000]), st.sampled_from(["arrays", "objects", "open"])
)
NUMBERS = st.one_of(
    st.builds(
        lambda n, sign: sign + "9" * n,
        st.sampled_from([20, 100, 101, 4_301, 20_000]),
        st.sampled_from(["", "-"]),
    ),
    st.sampled_from(["1e999", "-1e999", "1E400", "1e-99999", "NaN", "Infinity", "-Infinity", "-0"]),
    st.builds(lambda n: "0." + "1" * n, st.sampled_from([50, 500])),
    st.builds(lambda n: "1" + "0" * n + "e-5", st.sampled_from([99, 300])),
)
STRING_ATTACKS = [
    '"\\ud800"',
    '"\\udfff"',
    '"a\\ud83d"',
    '"\\ud83d\\ud83d"',
    '"\\udc00x"',
    '"\\u0000"',
    '"a\\u0000b"',
    '"\\u0000\\u0000"',
    '"a\x00b"',  # raw NUL: JSON allows no control character in a string
    '"\x1f"',
]
STRINGS = st.sampled_from(STRING_ATTACKS)
FRAGMENTS = st.one_of(DEEP, NUMBERS, STRINGS)


def dump(value: Any) -> str:
    """``value`` as JSON text, :class:`Raw` parts as they are and :class:`Pairs` in order."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict | Pairs):
        pairs = value.items() if isinstance(value, dict) else value
        return "{" + ",".join(f"{dump(key)}:{dump(item)}" for key, item in pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(item) for item in value) + "]"
    return json.dumps(value)


def _paths(value: Any) -> list[tuple[Any, ...]]:
    """The path of every part of ``value``, itself first; walked without recursion."""
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        found.append(path)
        if isinstance(item, dict):
            stack.extend(((*path, key), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend(((*path, index), child) for index, child in enumerate(item))
    return found


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {
            key: _replaced(child, rest, new) if key == head else child
            for key, child in value.items()
        }
    return [
        _replaced(child, rest, new) if index == head else child for index, child in enumerate(value)
    ]


def hostile_text(data: st.DataObject, value: Any) -> str:
    """``value`` written as JSON with one part of it made an attack, drawn from ``data``.

    The part is any value (made deep, a number or a string of the attacks), a text (made a
    lone surrogate or NUL: where a reader is most likely to take it as it is), a key of an
    object given twice, or a key made one of those strings.
    """
    paths = _paths(value)
    texts = [path for path in paths if isinstance(_at(value, path), str)]
    objects = [path for path in paths if isinstance(_at(value, path), dict) and _at(value, path)]
    ways = ["part", "part"] + ["text", "text"] * bool(texts) + ["twice", "key"] * bool(objects)
    how = data.draw(st.sampled_from(ways))
    if how in ("part", "text"):
        path = data.draw(st.sampled_from(paths if how == "part" else texts))
        fragment = data.draw(FRAGMENTS if how == "part" else STRINGS)
        return dump(_replaced(value, path, Raw(fragment)))
    path = data.draw(st.sampled_from(objects))
    pairs = Pairs(_at(value, path).items())
    key, item = data.draw(st.sampled_from(list(pairs)))
    if how == "twice":
        pairs.append((key, data.draw(st.sampled_from([item, None, Raw(data.draw(FRAGMENTS))]))))
    else:
        pairs[[k for k, _ in pairs].index(key)] = (Raw(data.draw(STRINGS)), item)
    return dump(_replaced(value, path, pairs))


SWEEP = [
    _deep(65, "arrays"),
    _deep(65, "objects"),
    _deep(50_000, "open"),
    "9" * 101,
    "-" + "9" * 4_301,
    "1e999",
    "NaN",
    *STRING_ATTACKS,
]
"""The attacks :func:`every_attack` puts in each part of a value."""


def every_attack(value: Any) -> Iterator[str]:
    """``value`` as JSON text with each attack of :data:`SWEEP` in each of its parts in turn,
    each key given twice, and each key made each of the strings."""
    for path in _paths(value):
        for fragment in SWEEP:
            yield dump(_replaced(value, path, Raw(fragment)))
        target = _at(value, path)
        if isinstance(target, dict):
            for key, item in target.items():
                yield dump(_replaced(value, path, Pairs([*target.items(), (key, item)])))
                for fragment in STRING_ATTACKS:
                    pairs = [(Raw(fragment) if k == key else k, v) for k, v in target.items()]
                    yield dump(_replaced(value, path, Pairs(pairs)))


class Faults(logging.Handler):
    """Collects the log records of a fault: a traceback, anything at ERROR and above, and a
    line no log file could hold (text UTF-8 cannot encode, which a stream handler would
    answer with a traceback of its own)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            record.getMessage().encode("utf-8")
        except UnicodeEncodeError:
            self.records.append(record)
            return
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(record)

    def lines(self) -> list[str]:
        """One line per fault, with its exception's type when it carries one."""
        return [
            f"{record.name}: {record.getMessage()!a}"
            + (
                f" ({record.exc_info[0].__name__})"
                if record.exc_info and record.exc_info[0]
                else ""
            )
            for record in self.records
        ]


@contextmanager
def logged_faults() -> Iterator[Faults]:
    """Every fault logged (by any logger) while the block runs."""
    faults = Faults()
    root = logging.getLogger()
    root.addHandler(faults)
    try:
        yield faults
    finally:
        root.removeHandler(faults)

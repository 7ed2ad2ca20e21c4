"""A call's JSON values as Cedar holds them, so that Cedar can always build the request.

Cedar has no ``null``, its integers (``Long``) are 64-bit, its fractions are ``decimal``
values of at most four places, and it reads an object ``{"__entity": ...}`` or
``{"__extn": ...}`` as an entity or an extension value. A call's arguments come from the
model, so each value is handed over as:

- ``null``: left out (a key whose value is ``null`` is absent from its record, an element
  ``null`` from its set);
- an integer within 64 bits: a ``Long``; beyond: its decimal digits, as a string;
- a number with a fraction of at most four places (``5.5``, ``-0.25``): a Cedar
  ``decimal``, compared with its methods (``.lessThan(decimal("100.0"))``); a whole number
  written with a fraction (``5.0``): a ``Long``; any other (more places, out of range, not
  finite): its Python text (``"0.00001"`` is ``"1e-05"``) as a string;
- an object holding one of Cedar's escapes (``__entity``, ``__extn``, ``__expr``): its JSON
  text, as a string, so arguments never name an entity or an extension value;
- text: itself (a lone surrogate, which UTF-8 cannot hold, made ``?``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["cedar_value"]

_LONG = range(-(2**63), 2**63)
_DECIMAL_LIMIT = Decimal(2**63) / 10_000
"""Cedar's decimals are 64-bit integers of ten-thousandths."""
_PLACES = 4
_ESCAPES = frozenset({"__entity", "__extn", "__expr"})


def cedar_value(value: Any) -> Any:
    """``value`` (JSON data) as Cedar's JSON holds it; ``None`` for a ``null``, which Cedar
    has no value for (the caller leaves it out)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value) if value in _LONG else str(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Mapping):
        if _ESCAPES.intersection(key for key in value if isinstance(key, str)):
            return _text(_json(value))
        record = {}
        for key, item in value.items():
            held = cedar_value(item)
            if held is not None:
                record[_text(str(key))] = held
        return record
    if isinstance(value, list | tuple):
        return [held for item in value if (held := cedar_value(item)) is not None]
    return _text(str(value))


def _number(value: float) -> Any:
    """A float as a ``Long``, a ``decimal`` or, when it is neither, its text."""
    if not math.isfinite(value):
        return repr(value)
    if value.is_integer() and int(value) in _LONG:
        return int(value)
    text = repr(value)
    if "e" in text or len(text.partition(".")[2]) > _PLACES:
        return text
    if abs(Decimal(text)) >= _DECIMAL_LIMIT:
        return text
    return {"__extn": {"fn": "decimal", "arg": text}}


def _text(text: str) -> str:
    """``text`` as UTF-8 holds it: a lone surrogate made ``?``."""
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")


def _json(value: Mapping[Any, Any]) -> str:
    """``value``'s JSON text (its ``str`` when it has none)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)

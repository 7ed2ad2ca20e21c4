"""The JSON text the room stores keep in their records (metadata, turn state, steps).

Both back ends write it compactly and read it back as an object; a value JSON cannot hold
is refused before anything is stored, and text that is not a JSON object is a corrupt record.
"""

from __future__ import annotations

import json
from typing import Any

from roomkit.core.exceptions import CorruptRecordError

__all__ = ["dump_json", "load_object"]


def dump_json(value: dict[str, Any], what: str, *, backend: str) -> str:
    """``value`` as compact JSON text.

    Raises:
        TypeError: ``value`` holds something JSON cannot represent; ``what`` names it.
    """
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} must be JSON-ready to be stored in {backend}: {error}") from None


def load_object(raw: bytes | str, where: str) -> dict[str, Any]:
    """The JSON object ``raw`` holds.

    Raises:
        CorruptRecordError: ``raw`` is not JSON, or not an object; ``where`` names the record.
    """
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as error:
        raise CorruptRecordError(f"{where} holds unreadable JSON ({error})") from None
    if not isinstance(value, dict):
        raise CorruptRecordError(f"{where} holds {type(value).__name__}, not a JSON object")
    return value

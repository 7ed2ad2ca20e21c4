"""Values an error message quotes, cut short: an id or a name is the caller's to choose, and a
10,000-character one must not make a 10,000-character message (nor a log line of that size)."""

from __future__ import annotations

__all__ = ["SHOWN_CHARS", "shown"]

SHOWN_CHARS = 80
"""The most characters a message gives one quoted value."""


def shown(value: object, *, limit: int = SHOWN_CHARS) -> str:
    """``value`` as a message quotes it: its ``repr``, cut to ``limit`` characters
    (:data:`SHOWN_CHARS` unless a message keeps its quotes shorter or longer), ``...``
    marking the cut."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."

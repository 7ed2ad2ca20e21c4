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
    try:
        text = repr(value)
    except ValueError:
        # An integer past Python's limit on digits (sys.get_int_max_str_digits()) has no
        # repr, nor has what holds one: the message says what it is instead.
        if isinstance(value, int):
            return f"an integer of about {value.bit_length() * 30103 // 100000 + 1:,} digits"
        return f"a {type(value).__name__} holding an integer too long to write out"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."

"""Time: the stamp records carry (timezone-aware UTC), and spans of seconds.

A span the developer passes (a token's lifetime, a ladder step's delay) is checked with
:func:`positive_seconds` where it enters, and shown to people with :func:`spoken_duration`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

__all__ = [
    "LONGEST_TIMEOUT",
    "bounded_seconds",
    "check_deadline",
    "positive_seconds",
    "spoken_duration",
    "utcnow",
]

LONGEST_TIMEOUT = 100 * 365 * 86_400.0
"""The longest deadline a request may be given, in seconds: a century. A longer one is a
mistake (a deadline past what a date can hold reaches no notice, no link, no page);
``None`` waits forever."""


def utcnow() -> datetime:
    """Now, in UTC (aware): the default stamp of every record's ``*_at`` field."""
    return datetime.now(UTC)


def positive_seconds(name: str, value: object) -> float:
    """``value`` as a float, when it is a finite number of seconds above zero.

    Raises:
        TypeError: ``value`` is not a number (a bool is not one), naming ``name``.
        ValueError: ``value`` is zero, negative, infinite or NaN, naming ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value}")
    return float(value)


def bounded_seconds(name: str, value: object) -> float:
    """``value`` as a float, when it is a number of seconds above zero, at most
    :data:`LONGEST_TIMEOUT`: a wait, an interval or a timeout past a century is a mistake
    (a digit too many, a unit mixed up), which a process would otherwise carry for ever.

    Raises:
        TypeError: ``value`` is not a number (a bool is not one), naming ``name``.
        ValueError: ``value`` is zero, negative, NaN or over a century, naming ``name``.
    """
    seconds = positive_seconds(name, value)
    if seconds > LONGEST_TIMEOUT:
        raise ValueError(
            f"{name} must be a positive number of seconds, at most {LONGEST_TIMEOUT:.0f} "
            f"(a century), got {seconds:g}"
        )
    return seconds


def check_deadline(what: str, timeout: object) -> None:
    """Refuse ``timeout`` unless it is ``None`` or a person's deadline: a number of seconds
    above zero, at most :data:`LONGEST_TIMEOUT`.

    Raises:
        ValueError: it is not, naming ``what`` (``"Approval timeout"``).
    """
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= LONGEST_TIMEOUT
    ):
        raise ValueError(
            f"{what} must be a positive number of seconds, at most {LONGEST_TIMEOUT:.0f} "
            f"(a century), got {timeout!r}"
        )


def spoken_duration(seconds: float) -> str:
    """``15 minutes``, ``2 hours``, ``90 seconds``: a span as people say it."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} seconds"

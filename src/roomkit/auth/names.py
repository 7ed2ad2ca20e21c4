"""What an actor name may be: a bounded, printable identifier.

An actor name (a participant id a token speaks for, a person in the notifier's directory)
ends up in responses, logs, ledger entries and every store's columns. So it is text of 1 to
:data:`MAX_ACTOR_CHARS` characters, each printable (no NUL, newline, tab or other control
character, no lone surrogate, no line or paragraph separator), with no space at either end.
Spaces inside and letters of any script are fine: ``"Zoë Müller"`` is a name.
"""

from __future__ import annotations

__all__ = ["MAX_ACTOR_CHARS", "RULE", "actor_name_problem", "check_actor_name"]

MAX_ACTOR_CHARS = 256
"""The longest actor name, in characters."""
RULE = (
    f"an actor name is 1 to {MAX_ACTOR_CHARS} printable characters, without a space at either end"
)
"""The rule, as a message says it."""


def actor_name_problem(value: object) -> str | None:
    """What makes ``value`` no actor name, or ``None`` when it is one.

    The message describes the problem without quoting the value (it may be a megabyte, or
    hold characters a log line should not).
    """
    if not isinstance(value, str):
        return f"is not text but {type(value).__name__}"
    if not value:
        return "is empty"
    if len(value) > MAX_ACTOR_CHARS:
        return f"is {len(value)} characters long, more than {MAX_ACTOR_CHARS}"
    if not value.isprintable():
        bad = next(char for char in value if not char.isprintable())
        if "\ud800" <= bad <= "\udfff":
            return f"is not valid text (it holds a lone surrogate, U+{ord(bad):04X})"
        return f"holds the unprintable character U+{ord(bad):04X}"
    if value != value.strip():
        return "starts or ends with a space"
    return None


def check_actor_name(value: object, *, what: str = "actor_id") -> str:
    """``value``, once it is known to be an actor name.

    Args:
        value: the name to check.
        what: how the message names it (``"actor_id"``, ``"[people.NAME]"``, ...).

    Raises:
        ValueError: it is not (the message says why, and what a name may be).
    """
    problem = actor_name_problem(value)
    if problem is None and isinstance(value, str):
        return value
    raise ValueError(f"{what} {problem}: {RULE}")

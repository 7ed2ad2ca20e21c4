"""How large a new request's arguments may be, checked before anything else reads them.

A new request's arguments are held to what a durable store keeps of them
(:data:`~roomkit.stores.MAX_ARGUMENTS_CHARS` as JSON,
:data:`~roomkit.models.json_limits.MAX_ARGUMENTS_DEPTH` levels, integers of
:data:`~roomkit.models.json_limits.MAX_NUMBER_CHARS` characters) on every store, the memory
store too: a question that works in tests on memory works in production on SQLite. The check
costs the common case (a few short texts) next to nothing: one walk of bounds on the JSON's
length (:mod:`roomkit.models.json_limits`, which stops once the least the JSON can be is well
past the limit, however many places a shared value is held in), the JSON itself only when
they do not settle it.

``create`` runs it before the checks that read every value (a loop, what is no JSON, a lone
surrogate, NaN), so arguments far too large are refused after that one short walk, and
arguments both too large and wrong otherwise are refused as too large. A value that holds
itself is one the walk finds too large (its JSON never ends): a look at no more than
:data:`LOOP_LOOK` of its values tells it apart, to say where it does.
"""

from __future__ import annotations

from typing import Any

from roomkit.core.exceptions import ArgumentsTooLargeError
from roomkit.models.json_limits import arguments_problem, circular_at
from roomkit.stores import MAX_ARGUMENTS_CHARS

__all__ = ["LOOP_LOOK", "PLAIN_ROOM", "check_arguments_size", "holding_itself"]

_ESCAPE = 6
"""The most characters JSON spells one character of text in (``\\u001f``)."""
PLAIN_ROOM = (MAX_ARGUMENTS_CHARS - 2) // _ESCAPE
"""For a flat object of texts: the most characters its keys and texts (plus one per key)
may sum to and fit whatever JSON makes of them; :func:`check_arguments_size` looks at more."""
LOOP_LOOK = MAX_ARGUMENTS_CHARS // 2
"""The most values of refused arguments read to find where they hold themselves: as many as
arguments within the limit can hold (two characters each at least), so a loop in arguments
that would fit otherwise is named, and arguments with more values are too large anyway."""


def check_arguments_size(arguments: dict[str, Any]) -> None:
    """Raise unless ``arguments`` fit in a request as JSON, on any store, and come back
    through any surface.

    Run before any other check of the arguments, it takes them as they come: too large,
    they are refused as such however else they are wrong (a lone surrogate, NaN; what is no
    JSON, when their length is settled without writing them).

    Raises:
        ArgumentsTooLargeError: they are longer than
            :data:`~roomkit.stores.MAX_ARGUMENTS_CHARS` as JSON (the message says how long,
            or at least how long for JSON past a few hundred thousand characters), nest
            deeper than :data:`~roomkit.models.json_limits.MAX_ARGUMENTS_DEPTH` levels (the
            message says where), or hold an integer longer than
            :data:`~roomkit.models.json_limits.MAX_NUMBER_CHARS` characters (it says where);
            and what to send instead.
        ValueError: they hold themselves (a dict or list inside itself), found among the
            first :data:`LOOP_LOOK` values; the message says where.
    """
    problem = arguments_problem(arguments)
    if problem is not None:
        # Only refused arguments are looked at for a loop, which the walk took for length.
        loop = circular_at(arguments, limit=LOOP_LOOK)
        if loop is not None:
            raise ValueError(holding_itself(loop))
        raise ArgumentsTooLargeError(problem)


def holding_itself(loop: str) -> str:
    """The message for arguments that hold themselves at ``loop``."""
    return (
        f"arguments hold themselves at {loop}, which JSON cannot write: pass a copy of the "
        "value, not the container it sits in"
    )

"""The ledger marks of ``shown`` entries, and which of them a handler in memory may forget.

:class:`~roomkit.tools.human_input.shown.ShownTrail` spends one mark per request and surface
(see that module). The ledger keeps a mark for a week, as it must on a durable store, where
another process may show the request. A handler whose requests live in memory keeps a
request's history only while its store holds the request: a mark of a request the store let
go guards no entry any more, and the handler's ledger forgets it at its next prune.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["mark", "stale_marks"]

_PREFIX = "notify:shown:"


def mark(pending_id: str, surface: str) -> str:
    """The ledger entry spent when ``surface`` first shows the request."""
    return f"{_PREFIX}{pending_id}:{surface}"


def stale_marks(holds: Callable[[str], bool] | None) -> Callable[[str], bool] | None:
    """What tells the ledger of a handler in memory which entries it may forget: the marks
    of the requests that ``holds`` (its store's) says it no longer keeps; ``None`` without
    ``holds``."""
    if holds is None:
        return None

    def stale(entry: str) -> bool:
        if not entry.startswith(_PREFIX):
            return False
        # The handler's ids hold no colon: the first one ends the id.
        pending_id = entry[len(_PREFIX) :].partition(":")[0]
        return not holds(pending_id)

    return stale

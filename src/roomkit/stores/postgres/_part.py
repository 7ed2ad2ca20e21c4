"""What every part of a PostgreSQL store holds: the store's pool, its SQL and its opener.

The store builds each part (:mod:`._reads`, :mod:`._settling`, :mod:`._approvals`,
:mod:`._spending`) once, over the same pool and statements; a part's own collaborators
are fields of its subclass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from roomkit.stores.postgres._feed import NotifyFeed
from roomkit.stores.postgres._link import Link
from roomkit.stores.postgres._schema import Statements

__all__ = ["Part", "WritingPart"]


@dataclass(slots=True, eq=False)
class Part:
    """A part of one store, on its pool."""

    link: Link
    """The store's pool."""
    sql: Statements
    """The store's SQL."""
    ready: Callable[[], Awaitable[None]]
    """Opens the store lazily (or raises when it is closed)."""


@dataclass(slots=True, eq=False)
class WritingPart(Part):
    """A part whose writes judge deadlines and tell the store's change feed."""

    judged_at: Callable[[], float | None]
    """The time a write judges deadlines by; ``None``: the server's, as it runs."""
    feed: NotifyFeed
    """The store's change feed, told of each change."""

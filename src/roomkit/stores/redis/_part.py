"""What every part of a Redis store holds: the store's client, its key layout and its name.

The store builds each part (:mod:`._reads`, :mod:`._settling`, :mod:`._approvals`,
:mod:`._votes`, :mod:`._spending`) once, over the same client; a part's own collaborators
are fields of its subclass.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from roomkit.stores.redis._history import Heads
from roomkit.stores.redis._layout import Layout

__all__ = ["ChainPart", "Part"]


@dataclass(slots=True, eq=False)
class Part:
    """A part of one store, on its client."""

    client: Redis
    """The store's client."""
    layout: Layout
    """The store's key layout."""
    where: str
    """The server, for error messages."""
    within: float
    """The store's ``timeout``: seconds a call waits for the server."""


@dataclass(slots=True, eq=False)
class ChainPart(Part):
    """A part that appends to the requests' history chains."""

    heads: Heads
    """This process's last head of each chain (their anchoring signs the heads written)."""
    audit_ms: int | str
    """The store's audit retention as the scripts take it."""

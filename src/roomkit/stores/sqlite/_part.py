"""What every part of a SQLite store holds: the store's write transaction and its reads.

The store builds each part (:mod:`._insert`, :mod:`._settling`, :mod:`._approvals`,
:mod:`._spending`) once, over the same connection; a part's own collaborators are fields of
its subclass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from roomkit.stores._trail import StoreTrail
from roomkit.stores.sqlite._batch import Write
from roomkit.stores.sqlite._feed import ChangeLog
from roomkit.stores.sqlite._trail import Session

__all__ = ["ChainPart", "Part", "Session"]


@dataclass(slots=True, eq=False)
class Part:
    """A part of one store, on its connection."""

    write: Callable[[Write[Any]], Awaitable[Any]]
    """Runs one write in the store's write transaction."""
    session: Session
    """Opens the store's connection for a read."""


@dataclass(slots=True, eq=False)
class ChainPart(Part):
    """A part whose writes settle requests and append to their history chains."""

    changes: ChangeLog
    """The store's change log, which a settle is staged in."""
    trail: StoreTrail
    """The store's audit trail, whose anchoring signs the chains' heads."""

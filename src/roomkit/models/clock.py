"""The time records are stamped with: timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utcnow"]


def utcnow() -> datetime:
    """Now, in UTC (aware): the default stamp of every record's ``*_at`` field."""
    return datetime.now(UTC)

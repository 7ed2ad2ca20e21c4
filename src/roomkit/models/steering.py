"""Steering a running turn from outside."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cancel"]


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop the turn before its next model round; calls already running finish first."""

    reason: str = ""
    """Why the turn is stopped (logged)."""

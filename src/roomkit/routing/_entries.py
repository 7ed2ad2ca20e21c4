"""The history entries routing writes, and what a router reads back from a history.

Each assignment of a rotation role or an on-call schedule is an ``escalated`` entry written
by the ``routing`` surface (``group``, ``approvers``, ``reason``, ``replaces`` when it
moved, ``step`` when a ladder step handed it on). Every process reads who has a request from
these entries alone, so that every process routes it alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["ROUTING", "Reading", "assigned_in", "assignment_entry"]

ROUTING = "routing"
"""The ``surface`` of the history entries routing writes."""


@dataclass(frozen=True, slots=True)
class Reading:
    """What one read of a request's history tells a router."""

    every: dict[str, list[str]]
    """Each group to everyone it was assigned to, oldest first."""
    handed: frozenset[str]
    """The groups the ladder step escalating handed on already."""
    length: int
    """How many entries the history held: the ``seq`` of the next one."""

    @classmethod
    def of(cls, entries: list[dict[str, Any]], step: str | None) -> Reading:
        """What the history ``entries`` say, for the ladder step ``step`` (if one)."""
        handed = frozenset(
            str(entry.get("group"))
            for entry in entries
            if step is not None and entry.get("surface") == ROUTING and entry.get("step") == step
        )
        return cls(assigned_in(entries), handed, len(entries))


def assigned_in(entries: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each group the history ``entries`` assign to everyone it was assigned to, oldest
    first."""
    found: dict[str, list[str]] = {}
    for entry in entries:
        group = entry.get("group")
        if entry.get("surface") == ROUTING and isinstance(group, str):
            people = entry.get("approvers") or []
            if people:
                found.setdefault(group, []).append(str(people[0]))
    return found


def assignment_entry(
    at: datetime, group: str, actor: str, replaces: str | None, reason: str, step: str | None
) -> dict[str, Any]:
    """The ``escalated`` entry saying that ``group`` is ``actor``'s from ``at`` (made by
    the ladder's ``step``, if one)."""
    entry: dict[str, Any] = {
        "type": "escalated",
        "at": at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "actor": None,
        "surface": ROUTING,
        "approvers": [actor],
        "group": group,
        "reason": reason,
    }
    if replaces is not None:
        entry["replaces"] = replaces
    if step is not None:
        entry["step"] = step
    return entry

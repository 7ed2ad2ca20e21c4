"""The timeouts Temporal gives each attempt of roomkit's activities, as a workflow sets them.

An ask schedules its create, expire and withdraw activities with these; a workflow that
wants a dead worker noticed sooner (or a slow store given longer) passes its own
:class:`ActivityTimeouts` to ``ask_person()`` or ``request_approval()``. An activity
scheduled by earlier code keeps the options it was scheduled with, and replay compares an
activity's type and id, not its timeouts: changing them needs no patch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.models.shown import shown

__all__ = ["ActivityTimeouts"]

_LONGEST = (
    ("start_to_close", "an attempt may run", "30 seconds"),
    ("unpolled", "a create may wait for a worker", "a minute"),
)
"""The timeouts kept to a century: each, what it bounds, and its default."""


@dataclass(frozen=True, slots=True)
class ActivityTimeouts:
    """How long one attempt of roomkit's activities may run, and how long Temporal waits for
    its heartbeat before it runs the activity again, on another worker.

    Raises:
        ValueError: a timeout that is no positive ``timedelta``, a ``start_to_close``
            longer than a century, or a ``heartbeat`` no shorter than ``start_to_close``.
    """

    start_to_close: timedelta = timedelta(seconds=30)
    """The longest one attempt runs; a longer one is retried. Not the way to notice a dead
    worker sooner: one attempt may wait on its store far longer than usual (a pool that
    queues calls, a server slow to answer, a busy SQLite file), and cutting it off piles
    attempts on a store that struggles."""
    heartbeat: timedelta = timedelta(seconds=5)
    """How long Temporal waits for a heartbeat. The activities heartbeat while they run,
    four times per ``heartbeat``, so a silence this long means the worker died (killed, or
    its host lost). A worker running an earlier roomkit's activities, which send no
    heartbeat, sees an attempt longer than this run again: the activities are safe to
    retry."""
    unpolled: timedelta = timedelta(minutes=1)
    """How long an ask's create waits for a worker to take it, when the worker running the
    workflow runs none of roomkit's activities (a worker given no activities polls for
    none), before ``workflow.logger`` warns, naming the task queue, to pass
    ``activities=activities(handler)`` if that worker is meant to run them. The ask does
    not fail: the create is scheduled again with the wait doubled (up to an hour, or this
    when longer), and the ask goes on as soon as a worker takes it, as a workflow-only
    worker's asks do once their activity workers are back. A worker that runs them takes
    its asks' creates itself, with no bound."""

    def __post_init__(self) -> None:
        for name in ("start_to_close", "heartbeat", "unpolled"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value <= timedelta(0):
                raise ValueError(
                    f"ActivityTimeouts(): {name} must be a positive timedelta, got {shown(value)}"
                )
        for name, what, usual in _LONGEST:
            if getattr(self, name).total_seconds() > LONGEST_TIMEOUT:
                raise ValueError(
                    f"ActivityTimeouts(): {name} is "
                    f"{getattr(self, name).total_seconds():,.0f} seconds, over the "
                    f"{LONGEST_TIMEOUT:,.0f} (a century) {what}: pass seconds or minutes "
                    f"(the default is {usual})"
                )
        if self.heartbeat >= self.start_to_close:
            raise ValueError(
                f"ActivityTimeouts(): heartbeat ({self.heartbeat}) must be shorter than "
                f"start_to_close ({self.start_to_close}), or a dead worker is noticed no "
                "sooner than a slow attempt: pass a heartbeat of seconds"
            )

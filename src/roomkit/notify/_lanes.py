"""The notifier's lanes: each surface's deliveries, and the steps, claimed and sent apart.

A lane is what one surface delivers, or the steps (announcements, ladder steps, endings:
the items that say who is told). Each lane has its own deliveries in flight, up to its own
limit, and its own back-off, so that no surface waits on another: a receiver that hangs
fills its own lane only, and one that keeps failing makes its own lane wait.

The back-off: after an attempt fails in a way worth retrying, the lane takes nothing new
for its surface's retry delay (the ``n``-th failure in a row waits ``Retry.delay(n)``;
attempts that were already under way when a failure was counted count with it), then one
delivery at a time until one goes through. The item that
failed is retried on its own schedule as before; the others of the lane wait their turn
without an attempt, so a receiver that is down is not sent its whole backlog each time.

A surface that reaches many independent receivers backs each off itself and says so
(``DeliveryError(alone=True)``): its lane does not back off, and the item is retried on its
own schedule. Web Push does (a push service per device, each backing off as a lane does,
:mod:`roomkit.notify._push_services`): one person's push service that hangs or fails holds
back no one else's pushes.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from roomkit.models.shown import shown
from roomkit.notify.retry import Retry
from roomkit.stores.outbox import STEPS

__all__ = ["MOST_IN_FLIGHT", "Lane", "Lanes", "lane_limit", "retry_policy"]

MOST_IN_FLIGHT = 10_000
"""The most deliveries a lane may have in flight at once: each holds a task and, for most
surfaces, a connection (a file descriptor) of its own, and the limit is each claim's row
count in the store's query."""


def lane_limit(what: str, value: object) -> int:
    """``value``, when it is a whole number from 1 to :data:`MOST_IN_FLIGHT`.

    Raises:
        TypeError: it is no int (a bool is not one), naming ``what``: a float would reach
            the store's claim as its row count (SQLite refuses it, the memory store not).
        ValueError: it is below 1 or over :data:`MOST_IN_FLIGHT`, naming ``what``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} is a whole number of deliveries in flight, got {shown(value)}")
    if not 1 <= value <= MOST_IN_FLIGHT:
        raise ValueError(f"{what} must be from 1 to {MOST_IN_FLIGHT:,}, got {value}")
    return value


def retry_policy(what: str, retry: object, default: Retry) -> Retry:
    """``retry``, a surface's retry policy, or ``default`` for ``None``.

    Raises:
        TypeError: ``retry`` is neither a :class:`Retry` nor ``None``, naming ``what``
            (``"Webhook(retry=...)"``): taken, it would fail the lane's first back-off,
            inside the notifier's loop.
    """
    if retry is None:
        return default
    if not isinstance(retry, Retry):
        raise TypeError(
            f"{what} must be a Retry (roomkit.notify.Retry(first=..., cap=..., give_up=...)), "
            f"or None for the defaults, got {shown(retry)}"
        )
    return retry


@dataclass(slots=True, eq=False)
class Lane:
    """One surface's deliveries (or the steps) in this notifier; or one push service's
    pushes, in a :class:`~roomkit.notify.webpush.WebPush`."""

    name: str
    limit: int
    """Deliveries in flight at once."""
    retry: Retry | None = None
    """The surface's retry policy, which paces the lane's back-off; ``None``: no back-off."""
    inflight: set[asyncio.Task[None]] = field(default_factory=set)
    failures: int = 0
    """Attempts in a row that failed and are worth retrying."""
    resume: float = -math.inf
    """When the lane may take work again, on the store's clock."""
    failed_at: float = -math.inf
    """When the last failure was counted."""

    def room(self, now: float) -> int:
        """How many items the lane may claim at ``now``."""
        if now < self.resume:
            return 0
        free = self.limit - len(self.inflight)
        if self.failures:
            # A failing lane tries one delivery at a time until one goes through: none
            # while one is under way.
            return 0 if self.inflight else min(free, 1)
        return max(0, free)

    def failed(self, started: float, now: float) -> float:
        """Count a failure worth retrying of an attempt begun at ``started``, at ``now``;
        returns how long the lane waits from ``now``."""
        if self.retry is None:
            return 0.0
        if started >= self.failed_at:
            # Attempts that were under way together fail together: they count once.
            self.failures += 1
            self.failed_at = now
            self.resume = max(self.resume, now + self.retry.delay(self.failures))
        return max(0.0, self.resume - now)

    def delivered(self) -> None:
        """An attempt went through: the lane is healthy again."""
        self.failures, self.resume, self.failed_at = 0, -math.inf, -math.inf

    def given_up(self, created: float, now: float) -> bool:
        """Whether an item owed since ``created`` is past its surface's give-up time while
        the lane is failing: it is dropped without another attempt."""
        return self.retry is not None and self.failures > 0 and now - created >= self.retry.give_up


class Lanes:
    """The steps' lane, one per surface, and the lane of the surfaces this notifier does
    not have (deliveries another notifier's configuration added: skipped)."""

    def __init__(self, surfaces: dict[str, object], limit: int) -> None:
        """Raises ``TypeError`` when a surface's retry policy is neither a :class:`Retry` nor
        ``None``."""
        self._named = {STEPS: Lane(STEPS, limit)}
        for name, retry in surfaces.items():
            policy = retry_policy(f"surface {shown(name)}'s retry", retry, Retry())
            self._named[name] = Lane(name, limit, policy)
        self.others = Lane("(other)", limit)

    def __iter__(self) -> Iterator[Lane]:
        yield from self._named.values()
        yield self.others

    def of(self, lane: str) -> Lane:
        """The lane of an item in the outbox's lane ``lane``."""
        return self._named.get(lane, self.others)

    def rooms(self, now: float) -> dict[str, int]:
        """How many items each named lane may claim now (``0`` included: the outbox's
        other lanes are those not named)."""
        return {name: lane.room(now) for name, lane in self._named.items()}

    def claimable(self, now: float) -> list[str]:
        """The named lanes that may claim now."""
        return [name for name, lane in self._named.items() if lane.room(now) > 0]

    def next_resume(self, now: float) -> float | None:
        """The earliest time after ``now`` a waiting lane with a free slot may claim."""
        times = [
            lane.resume for lane in self if lane.resume > now and len(lane.inflight) < lane.limit
        ]
        return min(times, default=None)

    @property
    def busy(self) -> bool:
        """Whether any delivery is in flight."""
        return any(lane.inflight for lane in self)

    def tasks(self) -> list[asyncio.Task[None]]:
        """Every delivery in flight."""
        return [task for lane in self for task in lane.inflight]

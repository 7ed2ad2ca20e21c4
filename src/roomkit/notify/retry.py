"""How long a surface keeps trying one delivery: the first retry within a second, then
doubling with jitter, each wait capped, giving up after a day."""

from __future__ import annotations

import random
from dataclasses import dataclass

from roomkit.models.clock import bounded_seconds

__all__ = ["Retry"]


@dataclass(frozen=True, slots=True)
class Retry:
    """A retry policy; the defaults are the webhook's.

    Attempt ``n`` (from 1) waits ``min(cap, first * 2 ** (n - 1))`` seconds, less a random
    share of up to ``jitter`` of it, after the attempt before; a delivery still failing
    ``give_up`` seconds after it was first owed is dropped (and logged).

    Raises:
        TypeError: ``first``, ``cap`` or ``give_up`` is no number of seconds, or ``jitter``
            no number (a bool is neither), naming it.
        ValueError: ``first``, ``cap`` or ``give_up`` is not above 0 and at most a century,
            or ``jitter`` not from 0 to below 1, naming it.
    """

    first: float = 1.0
    cap: float = 30.0
    give_up: float = 86_400.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        for name in ("first", "cap", "give_up"):
            # Over a century is a mistake (a digit too many, a unit mixed up), refused as
            # every other timing of the notifier is.
            bounded_seconds(f"Retry({name}=...)", getattr(self, name))
        jitter = self.jitter
        if isinstance(jitter, bool) or not isinstance(jitter, int | float):
            # Taken, it would fail each retry inside the notifier, as arithmetic naming nothing.
            raise TypeError(f"Retry(jitter=...) is a share from 0 to below 1, got {jitter!r}")
        if not 0 <= jitter < 1:  # NaN too
            raise ValueError(f"Retry(jitter=...) is a share from 0 to below 1, got {jitter}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``attempt`` failed, from 1)."""
        base = min(self.cap, self.first * 2.0 ** min(max(attempt - 1, 0), 64))
        return float(base * (1 - self.jitter * random.random()))

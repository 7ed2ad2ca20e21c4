"""How long a surface keeps trying one delivery: the first retry within a second, then
doubling with jitter, each wait capped, giving up after a day."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["Retry"]


@dataclass(frozen=True, slots=True)
class Retry:
    """A retry policy; the defaults are the webhook's.

    Attempt ``n`` (from 1) waits ``min(cap, first * 2 ** (n - 1))`` seconds, less a random
    share of up to ``jitter`` of it, after the attempt before; a delivery still failing
    ``give_up`` seconds after it was first owed is dropped (and logged).
    """

    first: float = 1.0
    cap: float = 30.0
    give_up: float = 86_400.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        for name in ("first", "cap", "give_up"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"Retry({name}=...) takes seconds, got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"Retry({name}=...) must be positive and finite, got {value}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"Retry(jitter=...) is a share from 0 to below 1, got {self.jitter}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``attempt`` failed, from 1)."""
        base = min(self.cap, self.first * 2.0 ** min(max(attempt - 1, 0), 64))
        return float(base * (1 - self.jitter * random.random()))

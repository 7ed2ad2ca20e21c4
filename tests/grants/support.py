"""What the grants tests share."""

from __future__ import annotations


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

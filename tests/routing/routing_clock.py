"""A clock the routing tests move by hand."""

from __future__ import annotations

from datetime import datetime, timedelta


class FakeClock:
    """Now, as the test sets it."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)

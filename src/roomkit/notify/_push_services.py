"""Each push service's back-off, on its own: one that fails holds back only the pushes to it.

Web Push is one surface of the notifier, but its deliveries go to many independent push
services (Chrome's, Firefox's, Apple's, one of your own), one per device. A push service,
known by its endpoint's origin (``scheme://host:port``), backs off as a notifier's lane
does (:mod:`roomkit.notify._lanes`): after a push to it fails in a way worth retrying
(a 5xx, 408, 429, a timeout, a connection error), it is sent nothing new for the surface's
retry delay, then one push at a time until one goes through. A push held back meanwhile is
not sent: it fails for its delivery alone (``DeliveryError(alone=True)``), which the
notifier retries on its own schedule, no sooner than the service takes pushes again
(``retry_after``), while the pushes to the other push services, other
people's and the same person's other devices', go out at once. A push service that says how
long to wait (``Retry-After``, with a 429 or a 5xx) is sent nothing new before then.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from datetime import UTC
from email.utils import parsedate_to_datetime

from roomkit.notify._lanes import Lane
from roomkit.notify.retry import Retry

__all__ = ["PushServices", "retry_after"]


def retry_after(value: str | None, date: str | None = None) -> float:
    """The seconds a push service's ``Retry-After`` asks it be left alone (``0.0`` for none,
    or one that cannot be read): a number of seconds, or an HTTP date, counted from the
    answer's own ``Date`` (this machine's clock without one), so that neither clock's skew
    counts."""
    text = (value or "").strip()
    if text.isascii() and text.isdigit():
        # Twelve digits are thousands of years: enough, and never a number too long to read.
        return float(int(text[:12]))
    when = _http_date(text)
    if when is None:
        return 0.0
    sent = _http_date(date or "")
    return max(0.0, when - (time.time() if sent is None else sent))


def _http_date(text: str) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        # OverflowError: a year too long for a date (a push service's, or whoever answers
        # in its place), read as no date rather than as the device's fault.
        return None
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


class PushServices:
    """The back-off of each push service one :class:`~roomkit.notify.webpush.WebPush`
    pushes to, by origin, on ``clock`` (the notifier's store's, once bound)."""

    def __init__(self, retry: Retry, clock: Callable[[], float]) -> None:
        self.retry = retry
        self.clock = clock
        self._services: dict[str, Lane] = {}

    def held(self, origin: str) -> str | None:
        """Why no push goes to ``origin`` now; ``None`` when one may."""
        service = self._services.get(origin)
        if service is None:
            return None
        now = self.clock()
        if now < service.resume:
            return f"is failing: nothing is pushed to it for {service.resume - now:.1f} s"
        if service.room(now) <= 0:
            return "is failing: one push at a time goes to it, and one is under way"
        return None

    def wait(self, origin: str) -> float:
        """Seconds before ``origin`` is sent anything new again; ``0.0`` when it may be now."""
        service = self._services.get(origin)
        if service is None:
            return 0.0
        return max(0.0, service.resume - self.clock())

    def begin(self, origin: str) -> float:
        """A push to ``origin`` begins, in the running task; when, on the clock."""
        service = self._services.get(origin)
        if service is None:
            service = self._services[origin] = Lane(origin, sys.maxsize, self.retry)
        task = asyncio.current_task()
        if task is not None:
            service.inflight.add(task)
        return self.clock()

    def end(
        self, origin: str, started: float, *, took: bool, retry: bool, after: float = 0.0
    ) -> None:
        """The push to ``origin`` begun at ``started`` (in the running task) ended: the
        service ``took`` it (or said the device is gone: it works again), or it failed in a
        way worth retrying (``retry``: the service backs off, for at least ``after`` seconds
        when it asked so), or neither (a refusal, which changes nothing)."""
        service = self._services.get(origin)
        if service is None:
            return
        task = asyncio.current_task()
        if task is not None:
            service.inflight.discard(task)
        if took:
            service.delivered()
        elif retry:
            now = self.clock()
            service.failed(started, now)
            # Asked to wait longer than the retry delay, the service is left alone that long.
            service.resume = max(service.resume, now + after)
        if not service.failures and not service.inflight:
            del self._services[origin]

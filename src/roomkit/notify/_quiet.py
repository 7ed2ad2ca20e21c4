"""An ntfy server that answered 429 is left alone: a minute, doubling to an hour.

ntfy answers a client sending too much with 429 and no ``Retry-After``, and ntfy.sh bans
an address that goes on sending after one. So a 429 makes the whole server quiet, whatever
the topic: nothing is sent to it for :data:`FIRST` seconds, doubling with each 429 in a
row up to :data:`CAP`; then one request at a time goes to it until one goes through, which
ends the quiet. A request held back meanwhile is not sent: it fails for its delivery alone,
retried no sooner than the server may be sent something again.
"""

from __future__ import annotations

from collections.abc import Callable

from roomkit.notify._lanes import Lane
from roomkit.notify.retry import Retry

__all__ = ["CAP", "FIRST", "Quiet"]

FIRST = 60.0
"""Seconds a server is left alone after its first 429."""
CAP = 3600.0
"""The longest it is left alone after 429s in a row."""


class Quiet:
    """The quiet of one server, on ``clock``: a notifier's lane (:class:`Lane`), failing only
    on 429s, paced by a retry of :data:`FIRST` seconds doubling to :data:`CAP`, no jitter."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._lane = Lane("ntfy", 1, Retry(first=FIRST, cap=CAP, jitter=0.0))
        self._probing = False

    def held(self) -> tuple[str, float] | None:
        """Why nothing may go to the server now, and the seconds left before something may;
        ``None`` when a request may go."""
        now, lane = self.clock(), self._lane
        if now < lane.resume:
            return f"is left alone for {lane.resume - now:.0f} s more", lane.resume - now
        if lane.failures and self._probing:
            return "is sent one request at a time until one goes through", 0.0
        return None

    def begin(self) -> float:
        """A request to the server begins; when, on the clock."""
        if self._lane.failures:
            self._probing = True
        return self.clock()

    def end(self, started: float, status: int | None) -> float:
        """The request begun at ``started`` ended with ``status`` (``None``: no answer);
        the seconds the server is now left alone (``0.0`` unless it answered 429). 429s of
        requests under way together count once."""
        self._probing = False
        if status == 429:
            return self._lane.failed(started, self.clock())
        if status is not None and status < 300:
            self._lane.delivered()
        return 0.0

"""An ntfy server that answered 429 is left alone: a minute, doubling to an hour.

ntfy answers a client sending too much with 429 and no ``Retry-After``, and ntfy.sh bans
an address that goes on sending after one. So a 429 makes the whole server quiet, whatever
the topic: nothing is sent to it for :data:`FIRST` seconds, doubling with each 429 in a
row up to :data:`CAP`; then one request at a time goes to it until one goes through, which
ends the quiet. A request held back meanwhile is not sent: it fails for its delivery alone,
retried no sooner than the server may be sent something again.

The quiet is the server's, not a surface's: every ``Ntfy`` of this process sending to the
same server (``scheme://host:port``), in one notifier or several, shares it
(:func:`quiet_of`), so that a second surface does not go on sending to a server that told
the first to slow down. Each surface measures it on its store's clock, as the notifier's
retries are: surfaces on clocks that read differently (the event loop's, a store's, a
test's) each keep the server's quiet on their own clock, and what one of them learns (a
429, a request that went through) counts for all.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from urllib.parse import urlsplit

from roomkit.notify._lanes import Lane
from roomkit.notify.retry import Retry

__all__ = ["CAP", "FIRST", "Quiet", "quiet_of", "server_of"]

FIRST = 60.0
"""Seconds a server is left alone after its first 429."""
CAP = 3600.0
"""The longest it is left alone after 429s in a row."""


class _Server:
    """What the quiets of one server share: the quiets themselves (one per clock), and
    whether a request is under way while the server is sent one at a time."""

    def __init__(self) -> None:
        self.quiets: weakref.WeakValueDictionary[object, Quiet] = weakref.WeakValueDictionary()
        self.probing = False


class Quiet:
    """The quiet of one server, on ``clock``: a notifier's lane (:class:`Lane`), failing only
    on 429s, paced by a retry of :data:`FIRST` seconds doubling to :data:`CAP`, no jitter;
    kept with the server's quiets on other clocks (``server``)."""

    def __init__(self, clock: Callable[[], float], server: _Server | None = None) -> None:
        self.clock = clock
        self._lane = Lane("ntfy", 1, Retry(first=FIRST, cap=CAP, jitter=0.0))
        self._server = server if server is not None else _Server()

    def held(self) -> tuple[str, float] | None:
        """Why nothing may go to the server now, and the seconds left before something may;
        ``None`` when a request may go."""
        now, lane = self.clock(), self._lane
        if now < lane.resume:
            return f"is left alone for {lane.resume - now:.0f} s more", lane.resume - now
        if lane.failures and self._server.probing:
            return "is sent one request at a time until one goes through", 0.0
        return None

    def begin(self) -> float:
        """A request to the server begins; when, on the clock."""
        if self._lane.failures:
            self._server.probing = True
        return self.clock()

    def end(self, started: float, status: int | None) -> float:
        """The request begun at ``started`` ended with ``status`` (``None``: no answer);
        the seconds the server is now left alone (``0.0`` unless it answered 429). 429s of
        requests under way together count once; the server's quiets on other clocks count
        it too."""
        self._server.probing = False
        others = [quiet for quiet in self._server.quiets.values() if quiet is not self]
        if status == 429:
            now = self.clock()
            took = now - started
            for other in others:
                try:
                    then = other.clock()
                except Exception:
                    continue  # a clock that cannot be read now (its store closed) learns later
                # The same request, on the other clock: begun as long before its now.
                other._lane.failed(then - took, then)
            return self._lane.failed(started, now)
        if status is not None and status < 300:
            for quiet in (self, *others):
                quiet._lane.delivered()
        return 0.0


# Held by the surfaces, through their quiets: a server's goes once no surface sends to it.
_SERVERS: weakref.WeakValueDictionary[str, _Server] = weakref.WeakValueDictionary()


def server_of(url: str) -> str:
    """The server ``url`` is on, as its quiet is shared: ``scheme://host:port``."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    host = (parts.hostname or "").rstrip(".")
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def quiet_of(server: str, base: object, clock: Callable[[], float]) -> Quiet:
    """The quiet of ``server`` (:func:`server_of`) in this process, measured on ``clock``;
    ``base`` names the time ``clock`` reads (a store's clock, the event loop's): one quiet
    per time, each told what the others learn."""
    shared = _SERVERS.get(server)
    if shared is None:
        shared = _Server()
        _SERVERS[server] = shared
    quiet = shared.quiets.get(base)
    if quiet is None:
        quiet = Quiet(clock, shared)
        shared.quiets[base] = quiet
    return quiet

"""What the desk accepts: body and frame sizes, JSON depth, request rates, origins, hosts.

Bodies are measured and checked before anything parses them (:mod:`roomkit.bodies`): a
declared ``Content-Length`` over the cap is refused at once, a streamed body is counted as
it arrives, and JSON nested too deep, with a number too long or a key given twice is
refused with 400. The rate limit is a token bucket per actor, so one person (or a leaked
token) cannot starve the others.
:class:`HostRule` says which ``Host`` names the desk answers to, so that a page served from
a name an attacker controls and then re-pointed at the desk (DNS rebinding) gets nowhere.
"""

from __future__ import annotations

import ipaddress
import math
import re
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fastapi.routing import APIRoute

from roomkit.bodies import BodyLimits, BodyRefusedError, bounded_route, load_json

__all__ = [
    "DeskLimits",
    "HostRule",
    "RateLimiter",
    "capped_route",
    "json_problem",
    "origin_allowed",
]


@dataclass(frozen=True, slots=True)
class DeskLimits:
    """The desk's limits; every one is per request, frame or actor."""

    max_body: int = 64 * 1024
    """Bytes in an HTTP request body; more gets 413."""
    max_frame: int = 64 * 1024
    """Bytes in a WebSocket frame from a client; more closes the socket with 1009."""
    max_depth: int = 32
    """Nesting of arrays and objects in a JSON body or frame; deeper gets 400."""
    rate: float = 20.0
    """Requests per second an actor may make, on average."""
    burst: int = 40
    """Requests an actor may make at once, before the rate applies."""
    admin_rate: float = 500.0
    """Requests per second an administrator may make, on average: their batch work (one
    token answering hundreds of questions) has a bucket of its own, not a person's."""
    admin_burst: int = 1000
    """Requests an administrator may make at once, before ``admin_rate`` applies."""
    auth_timeout: float = 10.0
    """Seconds a WebSocket client has to send its auth frame."""
    outbox: int = 1024
    """Frames queued for a WebSocket client that reads too slowly; past it, it is dropped."""

    def __post_init__(self) -> None:
        for name in ("max_body", "max_frame", "max_depth", "burst", "admin_burst", "outbox"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DeskLimits.{name} must be a positive int, got {value!r}")
        for name in ("rate", "admin_rate", "auth_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0 or math.isinf(value):
                raise ValueError(f"DeskLimits.{name} must be a positive number, got {value!r}")

    @property
    def bodies(self) -> BodyLimits:
        """What an HTTP request body may hold: ``max_body`` bytes, ``max_depth`` levels."""
        return BodyLimits(max_bytes=self.max_body, max_depth=self.max_depth)

    @property
    def frames(self) -> BodyLimits:
        """What a WebSocket frame may hold: ``max_frame`` bytes, ``max_depth`` levels."""
        return BodyLimits(max_bytes=self.max_frame, max_depth=self.max_depth)


class RateLimiter:
    """A token bucket per key: ``burst`` at once, then ``rate`` per second."""

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str) -> float:
        """Spend one token of ``key``'s bucket: ``0.0`` if allowed, else seconds to wait."""
        now = self.clock()
        tokens, then = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens - 1.0, now)
        if len(self._buckets) > 10_000:
            self._forget_full(now)
        return 0.0

    def _forget_full(self, now: float) -> None:
        # A bucket that has refilled is the same as no bucket: drop those.
        full = float(self.burst)
        for key in [
            key
            for key, (tokens, then) in self._buckets.items()
            if tokens + (now - then) * self.rate >= full
        ]:
            del self._buckets[key]


def origin_allowed(origin: str | None, host: str | None, allowed: Collection[str] | None) -> bool:
    """True when a WebSocket upgrade from ``origin`` may proceed.

    No ``Origin`` header means no browser (a script, the CLI): allowed. Otherwise the
    origin must be in ``allowed`` (``"*"`` allows all), or, with no list, be the desk's own
    host.
    """
    if origin is None:
        return True
    if allowed is not None:
        return "*" in allowed or origin.rstrip("/") in allowed
    return bool(host) and urlsplit(origin).netloc.lower() == (host or "").lower()


_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::[0-9]*)?", re.ASCII)


def host_name(host: str) -> str | None:
    """The name in a ``Host`` value (lower case, no port, no final dot); ``None`` if malformed."""
    match = _HOST.fullmatch(host.strip().lower())
    if match is None:
        return None
    name = match["name"]
    return name[:-1] if name.endswith(".") and len(name) > 1 else name


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
    except ValueError:
        return False
    return True


class HostRule:
    """The names the desk answers to, checked against each request's ``Host``.

    Accepted: any IP address (a page loaded from an address cannot be re-pointed at another
    machine), ``localhost`` and the names under ``.localhost`` (browsers resolve them to
    this machine themselves), the name the ASGI server gives for itself, and the names in
    ``allowed_hosts``; ``"*"`` accepts every name. A request with no ``Host`` comes from no
    browser, and is accepted.

    Args:
        allowed_hosts: further names, such as the one the desk is reached by through a
            proxy or a DNS name it is served under, without scheme or port.

    Raises:
        TypeError: ``allowed_hosts`` is one string, not a collection of them.
        ValueError: an entry is not a host name.
    """

    __slots__ = ("names",)

    def __init__(self, allowed_hosts: Collection[str] | None = None) -> None:
        if isinstance(allowed_hosts, str):
            raise TypeError(
                f"allowed_hosts is a collection of names: pass [{allowed_hosts!r}], not a string"
            )
        names: set[str] = set()
        for entry in () if allowed_hosts is None else allowed_hosts:
            name = host_name(entry) if isinstance(entry, str) else None
            # A name alone: with a port, host_name() would have dropped it unseen.
            if entry != "*" and (name is None or ":" in entry.strip().rsplit("]", 1)[-1]):
                raise ValueError(
                    f"allowed_hosts holds host names without scheme or port, such as "
                    f"'desk.example.com'; got {entry!r}"
                )
            names.add("*" if entry == "*" else str(name))
        self.names = frozenset(names)
        """The names accepted besides addresses, ``localhost`` and the server's own."""

    def allows(self, host: str | None, server: Sequence[Any] | None = None) -> bool:
        """True when a request with this ``Host`` (to this ASGI ``server``) may proceed."""
        if host is None or "*" in self.names:
            return True
        name = host_name(host)
        if name is None:
            return False
        if name in self.names or name == "localhost" or name.endswith(".localhost"):
            return True
        if server and isinstance(server[0], str) and name == server[0].lower():
            return True
        return _is_address(name)

    def refusal(self, host: str | None, server: Sequence[Any] | None = None) -> str | None:
        """Why a request with this ``Host`` is refused, or ``None`` when it is not."""
        if self.allows(host, server):
            return None
        shown = (host or "")[:100]
        return (
            f"Host {shown!r} is not a name of this desk: reach it by an address or "
            "localhost, or add the name to its allowed_hosts"
        )


def json_problem(body: bytes, max_depth: int) -> str | None:
    """What is wrong with a JSON body (unreadable, too deep, a number too long or out of
    range, a key given twice), or None; the checks of :func:`roomkit.bodies.load_json`."""
    try:
        load_json(body, BodyLimits(max_bytes=max(len(body), 1), max_depth=max_depth))
    except BodyRefusedError as refused:
        return str(refused)
    return None


def capped_route(limits: DeskLimits) -> type[APIRoute]:
    """An ``APIRoute`` class that checks a body's size and JSON before FastAPI parses it:
    413 over ``limits.max_body``, 400 for JSON the desk does not take (see
    :mod:`roomkit.bodies`), both as ``{"detail": str}``."""
    return bounded_route(limits.bodies)

"""Who may come in how often, and under which names: rate buckets and the ``Host`` rule.

Every door that serves people over HTTP (the desk, the AG-UI endpoint, ...) uses these:
:class:`RateLimiter` is a token bucket per actor, so one person (or a leaked token) cannot
starve the others; :class:`HostRule` says which ``Host`` names a server answers to, so that
a page served from a name an attacker controls and then re-pointed at it (DNS rebinding)
gets nowhere. Neither needs a web framework.
"""

from __future__ import annotations

import ipaddress
import re
import sys
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

__all__ = ["HostRule", "RateLimiter", "host_name", "is_address", "is_origin", "is_rate"]


class RateLimiter:
    """A token bucket per key: ``burst`` at once, then ``rate`` per second.

    Raises:
        ValueError: ``rate`` is not a positive number a float holds (nor one so small that
            a wait for one request is past what a float holds), or ``burst`` not a positive
            int.
    """

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not is_rate(rate):
            raise ValueError(
                f"rate is the requests a person may make per second: a positive number "
                f"from {sys.float_info.min:.1e} to {sys.float_info.max:.1e}, got {rate!r}"
            )
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValueError(
                f"burst is the requests a person may make at once: a positive int, got {burst!r}"
            )
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


def is_rate(rate: object) -> bool:
    """Whether :class:`RateLimiter` takes ``rate``: a positive number whose float, and the
    wait for one token at it (``1 / rate``), are finite (a larger int would fail every
    request, a subnormal float every refusal)."""
    if isinstance(rate, bool) or not isinstance(rate, int | float):
        return False
    try:
        as_float = float(rate)
    except OverflowError:
        return False
    return sys.float_info.min <= as_float <= sys.float_info.max


_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::[0-9]*)?", re.ASCII)


def host_name(host: str) -> str | None:
    """The name in a ``Host`` value (lower case, no port, no final dot); ``None`` if malformed."""
    match = _HOST.fullmatch(host.strip().lower())
    if match is None:
        return None
    name = match["name"]
    return name[:-1] if name.endswith(".") and len(name) > 1 else name


def is_address(host: str) -> bool:
    """Whether ``host`` is an IP address, an IPv6 one in brackets or not."""
    try:
        ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)
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
        return is_address(name)

    def refusal(self, host: str | None, server: Sequence[Any] | None = None) -> str | None:
        """Why a request with this ``Host`` is refused, or ``None`` when it is not."""
        if self.allows(host, server):
            return None
        shown = (host or "")[:100]
        return (
            f"Host {shown!r} is not a name of this desk: reach it by an address or "
            "localhost, or add the name to its allowed_hosts"
        )


_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*", re.ASCII)
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def is_origin(value: str) -> bool:
    """Whether ``value`` is ``scheme://host[:port]`` as a browser's ``Origin`` header spells
    it (one final ``/`` aside): lower case, no path, query, fragment or user, and no default
    port, which a browser leaves out; a desk's ``allowed_origins`` match it exactly."""
    scheme, sep, rest = value.removesuffix("/").partition("://")
    if not sep or not _SCHEME.fullmatch(scheme) or not rest or rest != rest.lower():
        return False
    if any(mark in rest for mark in "/?#@\\") or any(ch.isspace() for ch in rest):
        return False
    name = host_name(rest)
    if name is None or not name.strip(".") or (name.startswith("[") and not _bracketed(name)):
        return False
    tail = rest[len(name) :] if rest.startswith(name) else "."
    if not tail:
        return True
    port = tail.removeprefix(":")
    return (
        tail.startswith(":")
        and port.isascii()
        and port.isdigit()
        and not port.startswith("0")
        and int(port) <= 65535
        and _DEFAULT_PORTS.get(scheme) != port
    )


def _bracketed(name: str) -> bool:
    """Whether ``name`` is an IPv6 address in brackets."""
    try:
        ipaddress.IPv6Address(name[1:-1])
    except ValueError:
        return False
    return name.endswith("]")

"""What the desk accepts: body and frame sizes, JSON depth, request rates, origins, hosts.

A decision on an approval may carry every argument back (an edit), so the answer route takes
bodies up to :attr:`DeskLimits.max_answer_body`, which holds any arguments a request keeps
(:data:`~roomkit.models.json_limits.MAX_ARGUMENTS_CHARS`) however a client escapes them;
every other body, an answer to a question included, is held to ``max_body``.

Bodies are measured and checked before anything parses them (:mod:`roomkit.bodies`): a
declared ``Content-Length`` over the cap is refused at once, a streamed body is counted as
it arrives (and refused with 408 when it has not arrived whole within ``body_timeout``
seconds), and JSON nested too deep, with a number too long or a key given twice is
refused with 400. The head before a body has ``head_timeout`` seconds, which the server
applies (:class:`roomkit.desk.serving.Server`). The rate limit is a token bucket per actor
(administrators have buckets of their own), and :class:`HostRule` says which ``Host`` names
the desk answers to; both live in :mod:`roomkit.auth.traffic`, which every door shares, and
are re-exported here.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi.routing import APIRoute

from roomkit.auth.traffic import HostRule, RateLimiter, is_rate
from roomkit.bodies import BodyLimits, BodyRefusedError, bounded_route, load_json
from roomkit.models.json_limits import MAX_ARGUMENTS_CHARS

__all__ = [
    "EDIT_BODY_BYTES",
    "DeskLimits",
    "HostRule",
    "RateLimiter",
    "capped_route",
    "json_problem",
    "origin_allowed",
]


_ESCAPED_CHAR = 12
"""The most bytes JSON spells one character of arguments in: ``\\ud83d\\ude00`` for one
outside the Basic Multilingual Plane written with ASCII escapes only (``json.dumps``'s
default); in UTF-8 it takes four, a CJK character three."""
_ENVELOPE = 4 * 1024
"""Room for what an edit wraps the arguments in: the decision, the digest, separators."""
EDIT_BODY_BYTES = _ESCAPED_CHAR * MAX_ARGUMENTS_CHARS + _ENVELOPE
"""The bytes of the largest edit a decision body needs: any arguments a request keeps, each
character escaped, plus the envelope (676,096 bytes, 660 KiB). A client that indents its
JSON adds bytes this does not count."""


@dataclass(frozen=True, slots=True)
class DeskLimits:
    """The desk's limits; every one is per request, frame or actor, but ``sockets``."""

    max_body: int = 64 * 1024
    """Bytes in an HTTP request body; more gets 413. A decision on an approval may send
    :attr:`max_answer_body`."""
    max_frame: int = 64 * 1024
    """Bytes in a WebSocket frame from a client; more closes the socket with 1009."""
    max_depth: int = 32
    """Nesting of arrays and objects in a JSON body or frame; deeper gets 400."""
    body_timeout: float = 30.0
    """Seconds an HTTP request body has to arrive whole once its headers are in; later gets
    408 and the connection is closed (a client that trickles its body in, or stops halfway,
    holds no connection past it)."""
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
    send_timeout: float = 20.0
    """Seconds a send to a WebSocket client may wait on a client that reads nothing (its
    buffers full); past it, its connection is cut off (see :mod:`roomkit.desk.ws`)."""
    sockets_per_person: int = 16
    """WebSocket connections one person (the actor of a token or answer link) may hold at
    once; one more is closed with 1008 and the reason, the others staying open."""
    sockets: int = 4096
    """WebSocket connections the desk holds at once, everyone's together; one more is closed
    with 1013 and the reason (see :mod:`roomkit.desk.places`)."""
    head_timeout: float = 10.0
    """Seconds an HTTP request's head (request line and headers) has to arrive whole, from
    the connection opening or, on a connection kept alive, the previous response ending;
    later, the connection is closed (a client that sends nothing, or its headers a byte at a
    time, holds no connection past it). ``roomkit desk`` applies it through
    :class:`roomkit.desk.serving.Server`; an app served otherwise is bounded by its server."""

    def __post_init__(self) -> None:
        for name in (
            "max_body",
            "max_frame",
            "max_depth",
            "burst",
            "admin_burst",
            "outbox",
            "sockets_per_person",
            "sockets",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DeskLimits.{name} must be a positive int, got {value!r}")
        for name in (
            "rate",
            "admin_rate",
            "auth_timeout",
            "send_timeout",
            "head_timeout",
            "body_timeout",
        ):
            value = getattr(self, name)
            if name.endswith("rate"):
                if not is_rate(value):
                    raise ValueError(
                        f"DeskLimits.{name} must be a positive number from "
                        f"{sys.float_info.min:.1e} to {sys.float_info.max:.1e}, got {value!r}"
                    )
                continue
            number = not isinstance(value, bool) and isinstance(value, int | float)
            try:
                seconds = float(value) if number else math.nan
            except OverflowError:  # an int no float holds
                seconds = math.inf
            if not 0 < seconds < math.inf:
                raise ValueError(
                    f"DeskLimits.{name} must be a positive number of seconds, and finite, "
                    f"got {value!r}"
                )

    @property
    def bodies(self) -> BodyLimits:
        """What an HTTP request body may hold: ``max_body`` bytes, ``max_depth`` levels,
        arriving within ``body_timeout`` seconds."""
        return BodyLimits(
            max_bytes=self.max_body, max_depth=self.max_depth, read_timeout=self.body_timeout
        )

    @property
    def max_answer_body(self) -> int:
        """Bytes in the body of ``POST /api/requests/{id}/answer`` on an approval: at least
        :data:`EDIT_BODY_BYTES`, so that a person can send back as an edit any arguments
        the request holds (``max_body`` when that is more)."""
        return max(self.max_body, EDIT_BODY_BYTES)

    @property
    def frames(self) -> BodyLimits:
        """What a WebSocket frame may hold: ``max_frame`` bytes, ``max_depth`` levels."""
        return BodyLimits(max_bytes=self.max_frame, max_depth=self.max_depth)


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

"""Who is on call, from PagerDuty's ``GET /oncalls``.

:class:`PagerDutyOnCall` asks for a schedule's on-call entries at a moment (``since`` and
``until`` around it, users included) and takes the lowest escalation level's user: their
email address, which the directory maps to an actor, else their name. Answers are kept for
``refresh`` seconds. A read that fails (PagerDuty down, an error status, no answer within
10 s) is not tried again for 30 s: meanwhile the answer read before stands for the moments
of its shift, up to an hour after it was read, and any other lookup meets the failure at
once, so that routing does not wait on PagerDuty at every request.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from roomkit._extras import requires_extra
from roomkit._urls import http_url
from roomkit.routing._shared import RETRY, Backoff, joined, refresh_seconds

__all__ = ["PagerDutyOnCall"]

API = "https://api.pagerduty.com"

logger = logging.getLogger("roomkit.routing")

_FETCH = 10.0
"""Seconds an answer may take in all (a server that trickles it included)."""
MAX_ANSWER_BYTES = 1024 * 1024
"""The most bytes of an answer read: the entries of one schedule at one moment take a few
KiB, and an answer is read whole before it is parsed."""
_STALE = 3600.0
"""Seconds after it was read that an answer may stand in for PagerDuty while it fails."""


def _when(text: object, what: str) -> datetime | None:
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise ValueError(f"its {what} is not text but {type(text).__name__}")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"its {what} is not an ISO 8601 time: {text[:40]!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _entry(entry: object, at: datetime) -> tuple[int, str | None, datetime, datetime]:
    """An on-call entry's escalation level, person, start and end (an open end is ten
    years off).

    Raises:
        ValueError: the entry is not of ``/oncalls``' shape; the message says what is wrong.
    """
    if not isinstance(entry, dict):
        raise ValueError(f"it is not an object but {type(entry).__name__}")
    user = entry.get("user") or {}
    if not isinstance(user, dict):
        raise ValueError(f"its user is not an object but {type(user).__name__}")
    who = user.get("email") or user.get("summary") or user.get("name")
    if who is not None and not isinstance(who, str):
        raise ValueError(f"its user's email or name is not text but {type(who).__name__}")
    level = entry.get("escalation_level") or 1
    if isinstance(level, str) and level.isdecimal():
        level = int(level)
    if isinstance(level, bool) or not isinstance(level, int):
        raise ValueError(f"its escalation_level is not a whole number: {str(level)[:40]!r}")
    starts = _when(entry.get("start"), "start") or at
    ends = _when(entry.get("end"), "end") or at + timedelta(days=3650)
    return level, who, starts, ends


def _carries_the_token(url: str) -> bool:
    """Whether ``url`` may carry the token: ``https://``, or ``http://`` to a loopback
    host, where the token never leaves the machine."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme == "https":
        return bool(host)
    if parts.scheme != "http":
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class PagerDutyOnCall:
    """An on-call schedule read from PagerDuty (an :class:`~roomkit.people.OnCallSource`).

    Args:
        token: a REST API key (sent as ``Authorization: Token token=...``).
        schedule_id: the schedule (``PABC123``).
        base_url: the API's ``https://`` address (a regional endpoint); ``http://`` only to
            this machine (``127.0.0.1``, ``::1``, ``localhost``), for a local test server.
        refresh: seconds an answer is kept before PagerDuty is asked again (0 to a century,
            or ``math.inf``: never again).
        clock: the clock, in seconds, timing ``refresh`` and the wait after a failed read
            (``time.monotonic``; a test passes one it moves).

    Raises:
        ImportError: httpx is not installed (the ``oncall`` extra).
        TypeError: ``refresh`` is no number.
        ValueError: ``refresh`` is below 0 or over a century (but not ``math.inf``), an
            empty token or schedule id, or a ``base_url`` that is not an ``https://`` URL
            (plain ``http://`` only to a loopback host: the token is sent with every call) or
            that names a port outside 1 to 65535.
    """

    def __init__(
        self,
        token: str,
        schedule_id: str,
        *,
        base_url: str = API,
        refresh: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        with requires_extra("PagerDutyOnCall", "oncall"):
            import httpx
        self._httpx = httpx
        for what, value in (("token", token), ("schedule_id", schedule_id)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"PagerDutyOnCall({what}=...) must be non-empty text")
        if not isinstance(base_url, str) or not _carries_the_token(base_url):
            raise ValueError(
                f"PagerDutyOnCall(base_url=...) is the API's https:// address, not "
                f"{repr(base_url)[:200]}: every call carries the token, so plain http:// is "
                "taken only for this machine (127.0.0.1, ::1, localhost), as a local test "
                "server is"
            )
        # A port out of range or no number would fail every lookup inside httpx.
        http_url(base_url, "PagerDutyOnCall(base_url=...)")
        self.token = token
        self.schedule_id = schedule_id
        self.base_url = base_url.rstrip("/")
        self.refresh = refresh_seconds("PagerDutyOnCall(refresh=...)", refresh)
        self.clock = clock
        # The last answer: when it was read, the span it holds for, and the person.
        self._kept: tuple[float, datetime, datetime, str | None] | None = None
        # The last read's failure and when it came, until a read succeeds.
        self._backoff = Backoff()
        # The read under way, which lookups meanwhile wait on rather than asking again.
        self._reading: asyncio.Task[tuple[float, datetime, datetime, str | None]] | None = None

    async def on_call_at(self, at: datetime) -> str | None:
        """The person on call at ``at`` in the schedule; ``None`` when nobody is.

        Lookups meanwhile share a read under way: PagerDuty is asked once, not once by each,
        and the read goes on when a lookup waiting on it gives up (the routing's bound).

        Raises:
            TimeoutError, ValueError, httpx.HTTPError: PagerDuty could not be read, now or
                in the last 30 s, and no answer read before stands.
        """
        while True:
            now = self.clock()
            kept = self._kept
            if kept is None or not kept[1] <= at < kept[2] or now - kept[0] >= _STALE:
                kept = None
            elif now - kept[0] < self.refresh:
                return kept[3]
            failed = self._backoff.standing(now)
            if failed is not None:
                # Not asked again at each routing, which would wait up to 10 s on it every time.
                if kept is not None:
                    return kept[3]
                raise failed
            reading, mine = joined(self._reading, lambda: self._read(at))
            self._reading = reading
            try:
                read = await asyncio.shield(reading)
            except Exception as error:
                if kept is None:
                    raise
                if mine:
                    logger.warning(
                        "PagerDutyOnCall: schedule %s: could not ask PagerDuty (%s); the answer "
                        "read before stands, and PagerDuty is asked again in %g s",
                        self.schedule_id,
                        error,
                        RETRY,
                    )
                return kept[3]
            if read[1] <= at < read[2]:
                return read[3]
            # Another lookup's read, for a moment past the shift it found: this one reads.

    async def _read(self, at: datetime) -> tuple[float, datetime, datetime, str | None]:
        """Ask PagerDuty about ``at`` and keep the answer (or the failure): when it was read,
        the span it holds for, and the person."""
        try:
            best = await self._ask(at)
        except Exception as error:
            self._backoff.failed(self.clock(), error)
            raise
        self._backoff.succeeded()
        if best is None:
            self._kept = (self.clock(), at, at + timedelta(seconds=1), None)
        else:
            self._kept = (self.clock(), best[2], best[3], best[1])
        return self._kept

    async def _ask(self, at: datetime) -> tuple[int, str | None, datetime, datetime] | None:
        """PagerDuty's entry at ``at`` of the lowest escalation level: its level, person,
        start and end; ``None`` when it names nobody."""
        params: list[tuple[str, str | int | float | bool | None]] = [
            ("schedule_ids[]", self.schedule_id),
            ("since", at.astimezone(UTC).isoformat()),
            ("until", (at + timedelta(seconds=1)).astimezone(UTC).isoformat()),
            ("include[]", "users"),
        ]
        headers = {
            "Authorization": f"Token token={self.token}",
            "Accept": "application/vnd.pagerduty+json;version=2",
        }
        data = bytearray()
        try:
            async with (
                asyncio.timeout(_FETCH),
                self._httpx.AsyncClient(timeout=_FETCH) as client,
                client.stream(
                    "GET", f"{self.base_url}/oncalls", params=params, headers=headers
                ) as response,
            ):
                response.raise_for_status()
                # A server (or a proxy) sending without end would fill the memory.
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > MAX_ANSWER_BYTES:
                        raise ValueError(
                            f"PagerDuty's /oncalls answer holds more than {MAX_ANSWER_BYTES} "
                            "bytes: check base_url names the API"
                        )
        except TimeoutError:
            # Each read's timeout alone lets a server trickling its answer hold routing.
            raise TimeoutError(f"PagerDuty took longer than {_FETCH:g} s to answer") from None
        try:
            body: Any = json.loads(data)
        except (ValueError, RecursionError):
            raise ValueError(
                "PagerDuty's /oncalls answer is not JSON (or nests too deeply to read): check "
                "base_url names the API"
            ) from None
        best: tuple[int, str | None, datetime, datetime] | None = None
        entries = body.get("oncalls") if isinstance(body, dict) else None
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            try:
                level, who, starts, ends = _entry(entry, at)
            except (TypeError, ValueError) as error:
                # One entry PagerDuty (or a proxy) got wrong leaves the others standing.
                logger.warning(
                    "PagerDutyOnCall: schedule %s: skipping on-call entry %d: %s",
                    self.schedule_id,
                    index,
                    error,
                )
                continue
            if not starts <= at < ends:
                continue
            if best is None or level < best[0]:
                best = (level, who, starts, ends)
        return best

"""Who is on call, from an iCal schedule: a file, or a feed's URL.

PagerDuty, ServiceNow and Grafana OnCall all export their schedules as iCal: one event a
shift, recurring rules for the rotation, and overrides (an event with a ``RECURRENCE-ID``
replacing one shift, or one laid over the rotation). :class:`ICalOnCall` reads it with the
``icalendar`` and ``recurring-ical-events`` packages (the ``oncall`` extra) and says who is
on call at a moment: the event's attendee (an email address the directory maps to an
actor), else its summary. An event the libraries cannot read (no start, a time that does not
parse, a rule that is no rule, such as ``RRULE:garbage`` or ``BYMONTH=13``, or one nobody can
expand) or that ends before it starts is skipped, with a warning naming it, and the rest of
the schedule stands; so is one in a timezone no lookup can afford or no zone can be built
from. A file removed for a while leaves the schedule read before.

Reading a schedule and working out its shifts takes seconds for a large one, so it is done
on a worker thread, never on the event loop: parsing a file that changed or a feed read
again, preparing its recurring shifts (once per read), and expanding them for a window of
hours (:mod:`roomkit.routing._ical_shifts`), once for all the lookups in that window. One
expansion runs at a time, and it goes on when the lookup waiting on it gives up, for the
next lookup to find.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from roomkit._extras import requires_extra
from roomkit._urls import http_url
from roomkit.models.shown import shown
from roomkit.routing._ical_rules import (
    MAX_STEPS,
    backwards,
    costly,
    malformed,
    past_the_calendar,
    unreadable_times,
)
from roomkit.routing._ical_shifts import Shifts
from roomkit.routing._ical_zones import MAX_TRANSITIONS, zoned
from roomkit.routing._shared import Backoff, joined, refresh_seconds

__all__ = ["MAX_STEPS", "MAX_TRANSITIONS", "ICalOnCall"]

logger = logging.getLogger("roomkit.routing")

_FETCH = 10.0
"""Seconds a read of the feed may take in all (a server that trickles it included)."""
MAX_BYTES = 4 * 1024 * 1024
"""The most bytes of a schedule read, from a file or a feed (4 MiB: years of a team's
shifts take a few hundred KiB)."""
_SHOWN_PATH = 200
"""The most characters of a schedule's path or URL a message quotes."""


def _libraries() -> tuple[Any, Any]:
    with requires_extra("ICalOnCall", "oncall"):
        import icalendar
        import recurring_ical_events  # type: ignore[import-untyped]
    return icalendar, recurring_ical_events


def default_person(event: Any) -> str | None:
    """The person of a shift: its first attendee's address (``mailto:`` dropped; an
    attendee with no address counts as none), else its summary."""
    attendees = event.get("ATTENDEE")
    if not isinstance(attendees, list):
        attendees = [] if attendees is None else [attendees]
    for attendee in attendees:
        text = str(attendee)
        address = text[7:] if text.lower().startswith("mailto:") else text
        if address.strip():
            return address
    summary = event.get("SUMMARY")
    return str(summary).strip() or None if summary is not None else None


class ICalOnCall:
    """An on-call schedule read from iCal (an :class:`~roomkit.people.OnCallSource`).

    Args:
        source: a path to an ``.ics`` file, or an ``http(s)://`` URL of a feed (``webcal://``
            is read as ``https://``).
        refresh: seconds a feed is kept before it is fetched again, 0 to a century, or
            ``math.inf`` to fetch it once (a file is read again when it changes).
        person: the person of a shift event; by default its attendee's address, else its
            summary.
        max_bytes: the most a schedule may hold (:data:`MAX_BYTES`); a file or a feed
            holding more is refused, naming it, and the schedule read before stands.

    Raises:
        ImportError: the ``oncall`` extra is not installed (the message says how to).
        TypeError: ``refresh`` is no number.
        ValueError: ``refresh`` is below 0 or over a century (but not ``math.inf``); ``source``
            names no readable file, one that is not a regular file (a device such as ``/dev/zero``,
            a FIFO), one over ``max_bytes``, or one that is not an iCal calendar (a feed is read
            when it is first asked); or a feed's URL names no host, or a port outside 1 to 65535.
    """

    def __init__(
        self,
        source: str | Path,
        *,
        refresh: float = 300.0,
        person: Callable[[Any], str | None] = default_person,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._ical, self._recurring = _libraries()
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"ICalOnCall(max_bytes=...) is a count of bytes, got {max_bytes!r}")
        self.max_bytes = max_bytes
        text = str(source)
        if text.startswith("webcal://"):
            text = "https://" + text[len("webcal://") :]
        # A feed's port out of range or no number would fail every read inside httpx.
        self.url = (
            http_url(text, "ICalOnCall(source=...)")
            if text.startswith(("http://", "https://"))
            else None
        )
        self.path = None if self.url else Path(source)
        self.refresh = refresh_seconds("ICalOnCall(refresh=...)", refresh)
        self.person = person
        self._calendar: Any = None
        # The calendar read last, with its shifts prepared for lookups.
        self._prepared: tuple[Any, Shifts] | None = None
        # The read and preparation under way, which every lookup meanwhile waits on.
        self._preparing: asyncio.Task[Shifts] | None = None
        # The expansion of a window of shifts under way, which lookups meanwhile wait on.
        self._expanding: asyncio.Task[None] | None = None
        self._read_at = 0.0
        # A failed read of the feed: meanwhile the schedule read before stands, or, before
        # any, the failure.
        self._backoff = Backoff()
        self._stamp: tuple[int, ...] | None = None
        # The events skipped as unreadable, each warned of once.
        self._skipped: set[str] = set()
        if self.path is not None:
            # A wrong path is told now, not as a schedule that names nobody while requests wait.
            self._read_file()

    def _read_file(self) -> Any:
        assert self.path is not None
        where = shown(str(self.path), limit=_SHOWN_PATH)
        try:
            # Opened without waiting: a FIFO with no writer would hold the open forever.
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except (OSError, ValueError) as error:
            # ValueError: a path holding a NUL, which no file has.
            raise ValueError(
                f"ICalOnCall: cannot read {where} ({getattr(error, 'strerror', None) or error}): "
                "give the path of the schedule's .ics file, or its https:// URL"
            ) from None
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            os.close(fd)
            # A device (/dev/zero) or a FIFO never ends: reading it would never finish; a
            # folder opens, but is no file to read.
            raise ValueError(
                f"ICalOnCall: {where} is not a regular file: give the path of the "
                "schedule's .ics file, or its https:// URL"
            )
        with os.fdopen(fd, "rb") as file:
            data = b"" if status.st_size > self.max_bytes else file.read(self.max_bytes + 1)
        if status.st_size > self.max_bytes or len(data) > self.max_bytes:
            raise ValueError(self._too_big(where))
        self._calendar = self._parse(data, where)
        self._stamp = _stamp(status)
        return self._calendar

    def _too_big(self, where: str) -> str:
        return (
            f"ICalOnCall: {where} holds more than {self.max_bytes} bytes: give a schedule "
            "that holds only the shifts (older ones dropped), or pass ICalOnCall(max_bytes=...)"
        )

    def _parse(self, data: bytes, what: str) -> Any:
        try:
            calendar = self._ical.Calendar.from_ical(data)
        except ValueError as error:
            raise ValueError(f"ICalOnCall: {what} is not an iCal calendar ({error})") from None
        if not isinstance(calendar, self._ical.Calendar):
            raise ValueError(f"ICalOnCall: {what} holds no VCALENDAR")
        # A time icalendar could not parse fails every lookup of the schedule (and the
        # zones given to the times below): its event is left out first.
        self._leave_out(
            calendar,
            unreadable_times,
            "a date or time of theirs cannot be read (a DTSTART, DTEND, DURATION, "
            "RECURRENCE-ID, EXDATE or RDATE that does not parse, or a start or end that "
            "is no date or time)",
        )
        # A zone is worked out before any time in it is compared: a costly one would hang.
        until = datetime.now(UTC) + timedelta(days=366)
        # A zone whose rules no lookup can afford is refused, the events in it left out.
        self._leave_out_series(calendar, zoned(calendar, until))
        # An event with no start has no shift to give: the library would fail every lookup.
        self._leave_out(calendar, lambda c: "DTSTART" not in c, "they have no DTSTART")
        self._leave_out(
            calendar,
            backwards,
            "they end before they start (a DTEND before the DTSTART, or a negative DURATION)",
        )
        self._leave_out(
            calendar, past_the_calendar, "they last past the year 9999 (a DURATION too long)"
        )
        # A rule that is no rule (RRULE:garbage, BYMONTH=13) would be taken as one shift at
        # its start: its series is left out, the warning naming it and its rule.
        self._leave_out_series(calendar, _reasons(calendar, malformed))
        # A rule repeating by the second or minute is no rotation, and working out one shift
        # of it, or of an hourly rule begun long ago, means stepping through every repeat
        # since it began: minutes or hours of a worker thread at every routing. Its series
        # (overrides included) is left out.
        self._leave_out_series(calendar, _reasons(calendar, lambda c: costly(c, until)))
        return calendar

    def _leave_out_series(self, calendar: Any, whys: dict[str, str]) -> None:
        """Take the series of each UID in ``whys`` (overrides included) out of ``calendar``,
        one warning for each reason."""
        for why in dict.fromkeys(whys.values()):
            uids = {uid for uid, said in whys.items() if said == why}
            series = [
                c
                for c in calendar.subcomponents
                if c.name == "VEVENT" and str(c.get("UID", id(c))) in uids
            ]
            gone = {id(c) for c in series}
            calendar.subcomponents = [c for c in calendar.subcomponents if id(c) not in gone]
            self._skip(series, why)

    def _leave_out(self, calendar: Any, unreadable: Callable[[Any], bool], why: str) -> None:
        """Take the events ``unreadable`` says of out of ``calendar``, warning of them."""
        events = [c for c in calendar.subcomponents if c.name == "VEVENT" and unreadable(c)]
        if events:
            gone = {id(c) for c in events}
            calendar.subcomponents = [c for c in calendar.subcomponents if id(c) not in gone]
            self._skip(events, why)

    def _query(self, calendar: Any) -> Shifts:
        """The calendar's shifts, recurring ones expanded on demand; a series whose rule
        cannot be expanded is left out (and warned of once)."""
        query = self._recurring.of(calendar, skip_bad_series=True)
        kept = {str(series.uid) for series in query.series}
        # The library names an event without a UID by its Python id.
        dropped = [c for c in calendar.walk("VEVENT") if str(c.get("UID", id(c))) not in kept]
        if dropped:
            self._skip(dropped, "their recurrence cannot be worked out")
        return Shifts(query)

    def _skip(self, events: list[Any], why: str) -> None:
        uids = sorted({str(event.get("UID", "(no UID)")) for event in events} - self._skipped)
        if uids:
            self._skipped.update(uids)
            source = self.url or str(self.path)
            logger.warning(
                "ICalOnCall: %s: skipping the events with UID %s: %s; fix them in the schedule",
                source,
                # The calendar's text, quoted: a newline or control character in a UID
                # would otherwise write a log line of the calendar's own.
                ", ".join(shown(uid) for uid in uids),
                why,
            )

    async def _load(self) -> Any:
        if self.path is not None:
            try:
                stamp = _stamp(self.path.stat())
            except OSError as error:
                # Gone for a while (a deploy removing it before writing it again): the
                # schedule read before stands, and the file is read once it is back.
                if self._stamp is not None:
                    logger.warning(
                        "ICalOnCall: cannot read %r (%s); the schedule read before stands "
                        "until the file is back",
                        str(self.path),
                        error.strerror or error,
                    )
                self._stamp = None
                return self._calendar
            if self._calendar is None or stamp != self._stamp:
                try:
                    return await asyncio.to_thread(self._read_file)
                except ValueError as error:
                    if self._calendar is None:
                        raise
                    # Not read again until it changes: the schedule read before stands.
                    self._stamp = stamp
                    logger.warning(
                        "ICalOnCall: could not read the file again (%r); the schedule read "
                        "before stands",
                        error,
                    )
            return self._calendar
        now = time.monotonic()
        if self._calendar is not None and now - self._read_at < self.refresh:
            return self._calendar
        failed = self._backoff.standing(now)
        if failed is not None:
            if self._calendar is not None:
                return self._calendar
            raise failed
        try:
            data = await self._fetch()
            calendar = await asyncio.to_thread(self._parse, data, "the feed")
        except Exception as error:
            # Not read again at every routing: the last schedule read stands meanwhile.
            self._backoff.failed(now, error)
            if self._calendar is None:
                raise
            logger.warning(
                "ICalOnCall: could not read the feed again (%r); the schedule read before stands",
                error,
            )
            return self._calendar
        self._calendar, self._read_at = calendar, now
        self._backoff.succeeded()
        return self._calendar

    async def _fetch(self) -> bytes:
        """The feed's text, read within :data:`_FETCH` seconds in all, and at most
        ``max_bytes`` of it."""
        with requires_extra("ICalOnCall(url)", "oncall"):
            import httpx
        where = shown(str(self.url), limit=_SHOWN_PATH)
        data = bytearray()
        try:
            async with (
                asyncio.timeout(_FETCH),
                httpx.AsyncClient(timeout=_FETCH, follow_redirects=True) as client,
                client.stream("GET", str(self.url)) as response,
            ):
                response.raise_for_status()
                length = response.headers.get("Content-Length", "")
                if length.isdigit() and int(length) > self.max_bytes:
                    raise ValueError(self._too_big(f"the feed {where}"))
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > self.max_bytes:
                        raise ValueError(self._too_big(f"the feed {where}"))
        except TimeoutError:
            raise TimeoutError(f"the feed took longer than {_FETCH:g} s to read") from None
        return bytes(data)

    async def _shifts(self) -> Shifts:
        """The schedule's shifts, read again and prepared when it changed.

        One read and preparation runs at a time, every lookup meanwhile waiting on it, and
        it goes on when a lookup waiting on it gives up (the routing's bound): on a worker
        thread it could not be stopped, and a large schedule, read and prepared afresh by
        each lookup, would never be ready while the threads of those given up piled up.
        """
        self._preparing, _ = joined(self._preparing, self._prepare)
        return await asyncio.shield(self._preparing)

    async def _prepare(self) -> Shifts:
        calendar = await self._load()
        prepared = self._prepared
        if prepared is not None and prepared[0] is calendar:
            return prepared[1]
        query = await asyncio.to_thread(self._query, calendar)
        self._prepared = (calendar, query)
        return query

    async def on_call_at(self, at: datetime) -> str | None:
        """The person on call at ``at`` (of the shifts then, the one that started last: an
        override laid over the rotation wins; a cancelled one counts for nothing); ``None``
        when nobody is."""
        shifts = await self._shifts()
        while not shifts.ready(at) and at.tzinfo is not None:
            # Off the event loop, once for the lookups of a window of hours: a schedule of
            # thousands of rotations takes seconds to expand.
            self._expanding, _ = joined(
                self._expanding, lambda: asyncio.to_thread(shifts.expand, at)
            )
            await asyncio.shield(self._expanding)
        event = await asyncio.to_thread(shifts.on_call, at)
        return None if event is None else self.person(event)


def _reasons(calendar: Any, why_of: Callable[[Any], str | None]) -> dict[str, str]:
    """The reason ``why_of`` gives for each event of ``calendar``, by the event's UID (the
    events it gives none for left out)."""
    whys: dict[str, str] = {}
    for event in calendar.walk("VEVENT"):
        why = why_of(event)
        if why is not None:
            whys[str(event.get("UID", id(event)))] = why
    return whys


def _stamp(status: os.stat_result) -> tuple[int, ...]:
    """What tells a file changed: its modification time alone does not, when a deploy keeps
    it (``cp -p``, ``rsync -t``, an image's fixed times), or a file read half written is
    finished within the same tick of the clock; its size, its inode (a file renamed over it)
    and its change time (which no copy keeps) do."""
    return (status.st_mtime_ns, status.st_ctime_ns, status.st_size, status.st_ino, status.st_dev)

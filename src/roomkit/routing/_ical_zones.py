"""The timezones of an iCal schedule: each schedule read in its own zones, and a zone whose
rules no lookup can afford refused.

Working out a time in a zone a ``VTIMEZONE`` defines steps through every change of offset
its ``STANDARD`` and ``DAYLIGHT`` rules make since their ``DTSTART``, at every lookup: an
hourly rule from the year 1 is millions of steps, a worker thread held for minutes at every
routing. Such a zone is refused, and the events whose times are in it left out.

icalendar keeps the zone it builds from a ``VTIMEZONE`` for the whole process under its
``TZID``, the first definition read winning: a schedule's events would carry the zone of
another schedule, or of an earlier read of the same feed (a refused one included). Here the
events of a schedule are given the zones its own ``VTIMEZONE`` components define, and a
``TZID`` it does not define is read as UTC, as it is in a process that read no other
schedule. A ``TZID`` naming a zone of the tz database (``Europe/Paris``) is the database's.
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from roomkit.routing._ical_rules import listed, never_moves, periods, repeats, rules

__all__ = ["MAX_TRANSITIONS", "costly_zone", "zoned"]

MAX_TRANSITIONS = 10_000
"""The most changes of offset a timezone's rules may make between their ``DTSTART`` and a
year from now: each is stepped through at every lookup of a time in the zone (a zone of the
world changes twice a year, so this reaches back 5,000 years)."""

_DATED = ("DTSTART", "DTEND", "RECURRENCE-ID", "EXDATE", "RDATE")
"""The properties of an event whose times may name a ``TZID``."""


def costly_zone(zone: Any, until: datetime) -> str | None:
    """Why working out a time in the ``VTIMEZONE`` ``zone`` up to ``until`` costs more than
    a lookup may spend (a rule that never moves on, or too many changes of offset since its
    start); ``None`` when it does not."""
    transitions = 0.0
    for part in zone.subcomponents:
        if part.name not in ("STANDARD", "DAYLIGHT"):
            continue
        for dates in listed(part.get("RDATE")):
            transitions += len(getattr(dates, "dts", None) or [dates])
        for rule in rules(part):
            if never_moves(rule):
                return "its rules never move on (an INTERVAL below 1)"
            try:
                per_day = periods(rule)
            except Exception:
                # A rule that cannot be read is the timezone library's to refuse.
                continue
            transitions += repeats(part, rule, until, per_day)
    if transitions > MAX_TRANSITIONS:
        return (
            f"its rules change its offset over {MAX_TRANSITIONS} times between their DTSTART "
            "and a year from now, each worked out at every lookup (a FREQ=HOURLY rule, say): "
            "give its STANDARD and DAYLIGHT parts a yearly rule, or name a zone of the tz "
            "database such as Europe/Paris"
        )
    return None


def zoned(calendar: Any, until: datetime) -> dict[str, str]:
    """Give ``calendar``'s events the zones its own ``VTIMEZONE`` components define, and
    take out the zones no lookup can afford.

    Returns:
        The events whose times are in a refused zone (``UID`` to why), for the caller to
        leave out and warn of.
    """
    built: dict[str, tzinfo] = {}
    refused: dict[str, str] = {}
    for zone in calendar.walk("VTIMEZONE"):
        tzid = str(zone.get("TZID", "")).strip("/")
        why = costly_zone(zone, until)
        if why is None and tzid not in built:
            try:
                built[tzid] = zone.to_tz(lookup_tzid=False)
            except Exception as error:
                # A part without its start or offsets: icalendar builds no zone of it.
                why = (
                    f"it cannot be read ({error}): give it STANDARD or DAYLIGHT parts, "
                    "each with a DTSTART, a TZOFFSETFROM and a TZOFFSETTO"
                )
        if why is not None:
            refused[tzid] = why
    if refused:
        calendar.subcomponents = [
            c
            for c in calendar.subcomponents
            if c.name != "VTIMEZONE" or str(c.get("TZID", "")).strip("/") not in refused
        ]
    events: dict[str, str] = {}
    for event in calendar.walk("VEVENT"):
        for name in _DATED:
            for prop in listed(event.get(name)):
                tzid = str(getattr(prop, "params", {}).get("TZID", "")).strip("/")
                times = getattr(prop, "dts", None) or [prop]
                if tzid in refused and any(_own_zone(getattr(t, "dt", None)) for t in times):
                    events[str(event.get("UID", id(event)))] = (
                        f"their times are in the timezone {tzid!r}, which is refused: "
                        + refused[tzid]
                    )
                    continue
                for value in times:
                    _rezone(value, built.get(tzid))
    return events


def _rezone(value: Any, wanted: tzinfo | None) -> None:
    """Give the time ``value`` holds the zone ``wanted`` this schedule defines (UTC when it
    defines none), unless it is in a zone of the tz database."""
    held = getattr(value, "dt", None)
    times = held if isinstance(held, tuple) else (held,)
    if not any(_own_zone(t) for t in times):
        return
    moved = tuple(t.replace(tzinfo=wanted) if _own_zone(t) else t for t in times)
    value.dt = moved if isinstance(held, tuple) else moved[0]


def _own_zone(value: object) -> bool:
    """Whether ``value`` is a time in a zone some ``VTIMEZONE`` defined (neither the tz
    database's nor a fixed offset)."""
    if not isinstance(value, datetime) or value.tzinfo is None:
        return False
    return not isinstance(value.tzinfo, ZoneInfo | timezone)

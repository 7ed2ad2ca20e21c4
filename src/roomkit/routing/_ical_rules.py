"""What a lookup of an iCal schedule can afford: the shifts and timezones whose rules are
worked out from their start at every lookup, and the shifts the libraries cannot read.

:class:`~roomkit.routing.ical.ICalOnCall` leaves out, with a warning naming them, the events
these checks name, so that no lookup steps through millions of repeats on a worker thread
and one bad event never fails the schedule around it.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from roomkit.models.shown import shown


def aware(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return None


MAX_STEPS = 200_000
"""The most repeats a lookup may step through for one recurring shift: its rule is worked
out from its start at every lookup (some microseconds a repeat), so a series that would take
more, up to a year from now, is left out."""
_PERIODS_A_DAY = {"SECONDLY": 86_400, "MINUTELY": 1_440, "HOURLY": 24}
_FINER = ("BYHOUR", "BYMINUTE", "BYSECOND")
"""The parts of a rule that split each of its periods into more repeats, coarsest first."""


def _values(rule: Any, part: str) -> list[Any]:
    found = rule.get(part)
    return found if isinstance(found, list) else [] if found is None else [found]


def rules(component: Any) -> list[Any]:
    """The ``RRULE`` values of an event, or of a timezone's ``STANDARD``/``DAYLIGHT`` part."""
    return listed(component.get("RRULE"))


def _per_day(rule: Any) -> float:
    """The most repeats a day ``rule`` steps through: its periods a day (divided by its
    ``INTERVAL``), each split by the ``BYHOUR``, ``BYMINUTE`` and ``BYSECOND`` lists finer
    than its frequency."""
    freq = str((_values(rule, "FREQ") or [""])[0]).upper()
    interval = _values(rule, "INTERVAL")
    every = int(interval[0]) if interval and int(interval[0]) > 0 else 1
    steps = _PERIODS_A_DAY.get(freq, 1) / every
    finer = {"SECONDLY": 3, "MINUTELY": 2, "HOURLY": 1}.get(freq, 0)
    for part in _FINER[finer:]:
        steps *= max(1, len(set(map(str, _values(rule, part)))))
    return steps


NEVER_MOVES = (
    "their INTERVAL is not a positive count: the rule would never move on "
    "(INTERVAL=0 steps through the same instant for ever)"
)


def never_moves(rule: Any) -> bool:
    """Whether ``rule``'s ``INTERVAL`` is below 1: working it out never moves on."""
    try:
        interval = _values(rule, "INTERVAL")
        return bool(interval) and int(interval[0]) < 1
    except Exception:
        # An interval that cannot be read is the expansion's to skip, as unexpandable.
        return False


_PERIOD_DAYS = {"DAILY": 1, "WEEKLY": 7, "MONTHLY": 28, "YEARLY": 365}
_SPLITS = ("BYMONTH", "BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY", *_FINER)


def periods(rule: Any) -> float:
    """The most repeats a day ``rule`` makes, counted closely for a rule coarser than
    daily (a zone's yearly change counts once a year): its periods a day, or the repeats
    its ``BY`` lists split each period into, whichever is more."""
    freq = str((_values(rule, "FREQ") or [""])[0]).upper()
    interval = _values(rule, "INTERVAL")
    every = int(interval[0]) if interval and int(interval[0]) > 0 else 1
    if freq in _PERIODS_A_DAY:
        return _per_day(rule)
    a_day = 1 / _PERIOD_DAYS.get(freq, 1) / every
    split = 1
    for part in _SPLITS:
        split *= max(1, len(set(map(str, _values(rule, part)))))
    return a_day * split


def repeats(component: Any, rule: Any, until: datetime, per_day: float | None = None) -> float:
    """The most repeats working out ``rule`` of ``component`` steps through from its
    ``DTSTART`` up to ``until`` (its ``UNTIL`` or ``COUNT`` stopping it sooner), at
    ``per_day`` repeats a day (by default, as many as the rule has periods, at most one a
    day for a daily or coarser rule); 0 for a rule that cannot be read."""
    try:
        per_day = _per_day(rule) if per_day is None else per_day
        begins = aware(component["DTSTART"].dt)
        ends = min([until, *(aware(u) or until for u in _values(rule, "UNTIL"))])
        counts = [int(count) for count in _values(rule, "COUNT") if str(count).isdigit()]
    except Exception:
        # A rule that cannot be read is the expansion's to skip, as unexpandable.
        return 0.0
    if begins is None or ends <= begins:
        return 0.0
    steps = per_day * ((ends - begins).days + 1)
    return min(steps, counts[0] * max(per_day, 1.0)) if counts else steps


_FREQS = ("SECONDLY", "MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY")
_RANGES = {
    "BYSECOND": (0, 60, False),
    "BYMINUTE": (0, 59, False),
    "BYHOUR": (0, 23, False),
    "BYMONTHDAY": (1, 31, True),
    "BYYEARDAY": (1, 366, True),
    "BYWEEKNO": (1, 53, True),
    "BYSETPOS": (1, 366, True),
    "BYMONTH": (1, 12, False),
}
"""The values each ``BY`` part of a rule may take: lowest, highest, and whether counted
back from the end (a negative value) too."""


def _shown(value: object) -> str:
    """``value`` (a calendar's property, as its text) quoted for a warning: control
    characters escaped, and cut short."""
    return shown(str(value), limit=120)


def malformed(event: Any) -> str | None:
    """Why a rule of ``event`` is no rule (no ``FREQ``, a frequency or a ``BY`` value that
    does not exist, such as ``BYMONTH=13``), naming the event's summary and the rule;
    ``None`` when its rules read well. The libraries would take such an event as one shift
    at its start, putting its person on call for a rotation the schedule never holds."""
    for rule in rules(event):
        problem = _rule_problem(rule)
        if problem is not None:
            text = rule if isinstance(rule, str) else rule.to_ical().decode(errors="replace")
            named = f"RRULE:{_shown(text)}" if text else "RRULE"
            return f"the {named} of the shift {_shown(event.get('SUMMARY', ''))} {problem}"
    return None


def _rule_problem(rule: Any) -> str | None:
    if isinstance(rule, str):
        # icalendar keeps the text of a rule it could not read as the text itself.
        return "cannot be read"
    freq = [str(value).upper() for value in _values(rule, "FREQ")]
    if not freq:
        return "names no FREQ (no part of it reads as a rule: one reads FREQ=WEEKLY;BYDAY=MO)"
    if freq[0] not in _FREQS:
        return f"has FREQ={freq[0]}, which is none of {', '.join(_FREQS)}"
    for part, (low, high, back) in _RANGES.items():
        if part == "BYMONTH" and rule.get("RSCALE") is not None:
            # Another calendar's months (a leap month, a thirteenth) are its own to check.
            continue
        for value in _values(rule, part):
            try:
                number = int(str(value))
            except ValueError:
                return f"has {part}={value}, which is no number"
            if not (low <= number <= high or (back and -high <= number <= -low)):
                span = f"{low} to {high}" + (f", or -{high} to -{low}" if back else "")
                return f"has {part}={number}, outside {span}"
    return None


def costly(event: Any, until: datetime) -> str | None:
    """Why working out ``event``'s recurring shifts up to ``until`` costs more than a lookup
    may spend (a rule repeating more often than hourly, or too many repeats since its start);
    ``None`` when it does not."""
    steps = 0.0
    for rule in rules(event):
        if never_moves(rule):
            return NEVER_MOVES
        try:
            freq = str((_values(rule, "FREQ") or [""])[0]).upper()
            hourly = freq not in ("SECONDLY", "MINUTELY") and _per_day(rule) <= 24
        except Exception:
            # A rule that cannot be read is the expansion's to skip, as unexpandable.
            continue
        if not hourly:
            return (
                "they repeat more often than hourly (FREQ=SECONDLY or MINUTELY, or "
                "BYMINUTE or BYSECOND naming more than one)"
            )
        steps += repeats(event, rule, until)
    if steps > MAX_STEPS:
        return (
            f"their rule repeats over {MAX_STEPS} times between its DTSTART and a year from "
            "now, each worked out at every lookup: start the series later (a recent DTSTART)"
        )
    return None


def backwards(event: Any) -> bool:
    """Whether ``event`` ends before it starts (a ``DTEND`` before its ``DTSTART``, or a
    negative ``DURATION``): the expansion would swap its ends, and put its person on call
    over a span the schedule never gave them."""
    try:
        begins = aware(event["DTSTART"].dt)
        if "DTEND" in event:
            ends = aware(event["DTEND"].dt)
            return begins is not None and ends is not None and ends < begins
        if "DURATION" in event:
            length = event["DURATION"].dt
            return isinstance(length, timedelta) and length < timedelta(0)
    except Exception:
        # An end that cannot be read is the expansion's to skip, as unexpandable.
        return False
    return False


def past_the_calendar(event: Any) -> bool:
    """Whether ``event`` lasts past the last date Python holds (a ``DURATION`` of millions
    of weeks): the libraries fail every lookup of the schedule on it."""
    try:
        begins = event["DTSTART"].dt
        length = event["DURATION"].dt if "DURATION" in event else None
    except Exception:
        # A start or a length that cannot be read is the expansion's to skip.
        return False
    if not isinstance(begins, date) or not isinstance(length, timedelta):
        return False
    try:
        begins + length
    except OverflowError:
        return True
    return False


def unreadable_times(event: Any) -> bool:
    """Whether a date, time or length of ``event`` cannot be read: a value that does not
    parse (``DTSTART:garbage``, an ``EXDATE`` of text), a start, end or ``RECURRENCE-ID``
    that is no date or time (a ``PERIOD``), or a ``DURATION`` that is no length. The
    libraries fail every lookup of the whole schedule on such an event."""
    try:
        for name in ("DTSTART", "DTEND", "RECURRENCE-ID"):
            for prop in listed(event.get(name)):
                if not isinstance(prop.dt, date):
                    return True
        for prop in listed(event.get("DURATION")):
            if not isinstance(prop.dt, timedelta):
                return True
        for name in ("EXDATE", "RDATE"):
            for prop in listed(event.get(name)):
                for value in prop.dts:
                    _ = value.dt
    except Exception:
        # icalendar keeps a value it could not parse, and raises at the first read of it.
        return True
    return False


def listed(value: Any) -> list[Any]:
    """A property's values: the list icalendar gives for one named more than once, else
    the one value (none when it is absent)."""
    return value if isinstance(value, list) else [] if value is None else [value]

"""Who is on call at a moment of an iCal schedule, without expanding it at every lookup.

Expanding a schedule's recurring shifts at a moment steps through each rule from its start:
seconds of a worker thread for a schedule of thousands of rotations. :class:`Shifts` expands
them once for a window of some hours around the moments asked (the day before each moment
included, as a lookup's own expansion does), keeps the shifts of the last few windows, and
answers a lookup in the window from them, naming whom an expansion at that moment names
(the tests compare the two on random schedules; two shifts of one series starting together
are left to such an expansion). A series that a wider expansion may read differently is
expanded at every lookup, as before: one whose own overrides repeat (an override with a rule
of its own), with a period (``RDATE;VALUE=PERIOD``) longer than its event, of all-day shifts
repeated within a day, or whose expansion fails part way. How long shifts last is measured
in real time: one over a daylight-saving change lasts an hour more or less than its wall clock.
"""

from __future__ import annotations

import contextlib
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from roomkit.routing._ical_rules import aware

__all__ = ["Shifts", "shift_of"]

BEFORE = timedelta(days=1)
"""How long before a moment a shift may start and be found by a lookup at that moment."""
AFTER = timedelta(seconds=1)
"""How long after a moment a lookup's expansion reaches."""
CHUNK = timedelta(hours=6)
"""The moments one expansion answers for: lookups within these hours share it."""
_MARGIN = timedelta(hours=1)
"""Added on both sides of a window: a wall-clock hour repeated by a daylight-saving change."""
_LONGER = timedelta(hours=3)
"""Added to a window's longest shift where a lookup stops looking back: insurance against a
shift read longer by a lookup than its span in real time (the wall clock of one zone)."""
_KEPT = 4
"""How many windows' shifts are kept (the current one, and a few a lookup went back to)."""


def shift_of(event: Any) -> tuple[bool, datetime | None, datetime | None]:
    """Whether ``event`` is cancelled, and its start and end, as a lookup reads them."""
    cancelled = str(event.get("STATUS", "")).upper() == "CANCELLED"
    starts = aware(event.get("DTSTART").dt if event.get("DTSTART") else None)
    ends = aware(event.get("DTEND").dt if event.get("DTEND") else None)
    return cancelled, starts, ends


@dataclass(frozen=True, slots=True)
class _Shift:
    """One occurrence found in a window: its place in the expansion's order, its start and
    end as a lookup reads them, and the library's occurrence."""

    series: int
    place: int
    starts: datetime
    ends: datetime
    occurrence: Any


class _Window:
    """The shifts of one window, by start, that a lookup in it may find on call."""

    def __init__(self, shifts: list[_Shift], zone: tzinfo | None) -> None:
        # Held while the window is kept: a key naming an unhashable zone by its id needs it.
        self.zone = zone
        shifts.sort(key=lambda shift: shift.starts)
        self.shifts = shifts
        self.starts = [shift.starts for shift in shifts]
        # In real time: a shift over a daylight-saving change lasts an hour more or less than
        # its wall-clock difference in its zone.
        self.longest = _LONGER + max(
            (shift.ends.astimezone(UTC) - shift.starts.astimezone(UTC) for shift in shifts),
            default=timedelta(0),
        )

    def covering(self, at: datetime, seen: Callable[[_Shift], bool]) -> list[_Shift]:
        """The shifts on at ``at`` (start reached, end not) and ``seen`` by a lookup there,
        of those the ones that started last."""
        found: list[_Shift] = []
        index = bisect_right(self.starts, at)
        real = at.astimezone(UTC)
        while index > 0:
            index -= 1
            shift = self.shifts[index]
            ago = real - shift.starts.astimezone(UTC)
            if ago >= self.longest or (found and shift.starts < found[0].starts):
                # Too long ago to last until ``at``, or before those found.
                break
            if shift.ends > at and seen(shift):
                found.append(shift)
        return found


class Shifts:
    """A schedule's shifts prepared for lookups: the library's query of the calendar, and
    the shifts of the windows expanded so far.

    Args:
        query: the ``recurring-ical-events`` query of the calendar.
    """

    def __init__(self, query: Any) -> None:
        self.query = query
        self._errors = tuple(getattr(query, "suppressed_errors", ()))
        # Series expanded at each lookup: their overrides repeat, a shift of theirs lasts
        # longer than the event, or an expansion of theirs failed part way, so that a wider
        # window need not hold what a lookup's would.
        self._exact: set[int] = {
            index
            for index, series in enumerate(query.series)
            if any(_repeats(modification) for modification in _modifications(series))
            or _outlasts(series)
            or _hourly_days(series)
        }
        # From when to when each series' shifts may reach (None: no end, or not known).
        self._reach = [_reach(series) for series in query.series]
        self._windows: OrderedDict[tuple[datetime, Hashable], _Window] = OrderedDict()
        self._lock = threading.Lock()

    def window_of(self, at: datetime) -> tuple[datetime, Hashable] | None:
        """The key of the window answering for ``at``: the start of its hours and its zone
        (floating and all-day times are read in it); ``None`` for a time with no zone."""
        if at.tzinfo is None:
            return None
        utc = at.astimezone(UTC)
        chunk = int((utc - datetime(1970, 1, 1, tzinfo=UTC)) // CHUNK)
        return datetime(1970, 1, 1, tzinfo=UTC) + chunk * CHUNK, _zone_key(at.tzinfo)

    def ready(self, at: datetime) -> bool:
        """Whether a lookup at ``at`` is answered without expanding the whole schedule."""
        key = self.window_of(at)
        with self._lock:
            return key is not None and key in self._windows

    def expand(self, at: datetime) -> None:
        """Expand the shifts of the window answering for ``at`` (on a worker thread)."""
        key = self.window_of(at)
        if key is None:
            return
        with self._lock:
            if key in self._windows:
                return
        begins, zone = key[0], at.tzinfo
        start = (begins - BEFORE - _MARGIN).astimezone(zone)
        stop = (begins + CHUNK + AFTER + _MARGIN).astimezone(zone)
        found: list[_Shift] = []
        failed: set[int] = set()
        keep = self.query.keep_recurrence_attributes
        for index, series in enumerate(self.query.series):
            reach = self._reach[index]
            near = reach is None or (reach[0] <= stop and start <= reach[1])
            if index in self._exact or not near:
                # Expanded at each lookup, or no shift of it comes near the window.
                continue
            try:
                occurrences = list(series.between(start, stop))
            except self._errors:
                failed.add(index)
                continue
            for place, occurrence in enumerate(occurrences):
                cancelled, starts, ends = shift_of(occurrence.as_component(keep))
                if not cancelled and starts is not None and ends is not None and starts < ends:
                    found.append(_Shift(index, place, starts, ends, occurrence))
        window = _Window(found, zone)
        with self._lock:
            self._exact |= failed
            self._windows[key] = window
            while len(self._windows) > _KEPT:
                self._windows.popitem(last=False)

    def on_call(self, at: datetime) -> Any | None:
        """The shift on call at ``at`` (of those on, the one that started last, the last of
        the expansion's order among those that started together), or ``None``.

        The window answering for ``at`` is expanded first when it is not yet (seconds of a
        large schedule): call :meth:`expand` on a worker thread before.
        """
        key = self.window_of(at)
        if key is None:
            return self._expanded(at, range(len(self.query.series)))
        with self._lock:
            window = self._windows.get(key)
            exact = sorted(self._exact)
        if window is None:
            self.expand(at)
            return self.on_call(at)
        span = (at - BEFORE, at + AFTER)
        found = window.covering(
            # A series an expansion of a later window failed on is the exact one's to say.
            at,
            lambda shift: shift.series not in exact and shift.occurrence.is_in_span(*span),
        )
        places = [(shift.series, shift.place) for shift in found]
        if len({series for series, _ in places}) < len(places):
            # Two shifts of one series started together: their order is the expansion's at
            # this moment, which a window's may not keep.
            return self._expanded(at, range(len(self.query.series)))
        best = max(found, key=lambda shift: shift.series, default=None)
        if not exact:
            return best and best.occurrence.as_component(self.query.keep_recurrence_attributes)
        return self._expanded(at, exact, best)

    def _expanded(self, at: datetime, series: Any, best: _Shift | None = None) -> Any | None:
        """The shift on call at ``at`` of an expansion at that moment of ``series`` (the
        indices of the query's series), or ``best`` (a shift of a series between them and
        after it in order) when none of theirs is later."""
        keep = self.query.keep_recurrence_attributes
        current: list[tuple[datetime, int, Any]] = []
        if best is not None:
            current.append((best.starts, best.series, best.occurrence.as_component(keep)))
        for index in series:
            occurrences: list[Any] = []
            # As the library's own query: a series that fails part way gives what it gave.
            with contextlib.suppress(*self._errors):
                occurrences.extend(self.query.series[index].between(at - BEFORE, at + AFTER))
            for occurrence in occurrences:
                event = occurrence.as_component(keep)
                cancelled, starts, ends = shift_of(event)
                if (
                    not cancelled
                    and starts is not None
                    and ends is not None
                    and starts <= at < ends
                ):
                    current.append((starts, index, event))
        if not current:
            return None
        current.sort(key=lambda found: (found[0], found[1]))
        return current[-1][2]


def _zone_key(zone: tzinfo) -> Hashable:
    """``zone`` in a window's key: itself, or its id when it cannot be hashed (dateutil's
    zones), the window holding it so that the id names no other zone while it is kept."""
    try:
        hash(zone)
    except TypeError:
        return ("id", id(zone))
    return zone


_SLACK = timedelta(days=3)
"""Added on both sides of a series' reach: a floating time is read in any zone (up to 26
hours apart), a rule's UNTIL date is read to the end of its day."""
_SIMPLE = {"FREQ", "INTERVAL", "COUNT", "BYDAY", "BYHOUR", "BYMINUTE", "BYSECOND", "WKST"}
"""The parts of a daily or weekly rule that make at least one repeat each week."""


def _reach(series: Any) -> tuple[datetime, datetime] | None:
    """From when to when the shifts of ``series`` may start and end, widened by
    :data:`_SLACK`; ``None`` when they have no end (a rule with neither UNTIL nor a COUNT a
    week of it is sure to reach), or when it is not known (an override that moves the
    shifts after it, or values the library reads differently)."""
    try:
        adapters = list(series.components)
        if not adapters or any(adapter.this_and_future for adapter in adapters):
            return None
        spans: list[tuple[datetime, datetime]] = []
        for adapter in adapters:
            starts = aware(adapter.start)
            spans.append((starts, aware(adapter.end)))  # type: ignore[arg-type]
            for rdate in adapter.rdates:
                if isinstance(rdate, tuple):
                    first, last = rdate
                    last = first + last if isinstance(last, timedelta) else last
                    spans.append((aware(first), aware(last)))  # type: ignore[arg-type]
                else:
                    spans.append((aware(rdate), aware(rdate)))  # type: ignore[arg-type]
            for rule in adapter.rrules:
                ends = _rule_ends(rule, starts)  # type: ignore[arg-type]
                if ends is None:
                    return None
                spans.append((starts, ends))  # type: ignore[arg-type]
        longest = max(last - first for first, last in spans)
        first = min(first for first, _ in spans)
        last = max(last for _, last in spans)
        return first - _SLACK, last + longest + _SLACK
    except Exception:
        # Whatever this cannot read is expanded at every window, as the library reads it.
        return None


def _rule_ends(text: str, starts: datetime) -> datetime | None:
    """The latest a rule's repeats may start; ``None`` when it repeats without end."""
    import icalendar

    rule = icalendar.vRecur.from_ical(text)
    until = rule.get("UNTIL")
    if until:
        return aware(until[0])
    count = rule.get("COUNT")
    if not count or int(count[0]) < 1:
        return None
    freq = str(rule.get("FREQ", [""])[0]).upper()
    days = rule.get("BYDAY") or []
    if freq not in ("DAILY", "WEEKLY") or not set(rule) <= _SIMPLE:
        return None
    if any(not str(day).isalpha() for day in days):
        return None
    every = int(rule.get("INTERVAL", [1])[0])
    # Each week of the rule's periods holds at least one repeat.
    return starts + timedelta(weeks=int(count[0]) * max(every, 1))


def _outlasts(series: Any) -> bool:
    """Whether a shift of ``series`` given as a period (``RDATE;VALUE=PERIOD``) lasts longer
    than its event: the library finds shifts near a moment by the event's duration, not the
    period's, which a window's wider expansion does not repeat."""
    try:
        for adapter in series.components:
            lasts = aware(adapter.end) - aware(adapter.start)  # type: ignore[operator]
            for rdate in adapter.rdates:
                if isinstance(rdate, tuple):
                    first, last = rdate
                    if (last if isinstance(last, timedelta) else last - first) > lasts:
                        return True
    except Exception:
        # What this cannot read is expanded at each lookup.
        return True
    return False


_WITHIN_A_DAY = {"BYHOUR", "BYMINUTE", "BYSECOND"}
"""Rule parts that repeat a shift within a day."""


def _hourly_days(series: Any) -> bool:
    """Whether ``series`` repeats all-day shifts within a day (a rule with hours, minutes or
    seconds on a date, which RFC 5545 forbids): the library's expansion of such a rule at a
    moment and a window's wider one do not find the same shifts."""
    import icalendar

    try:
        for adapter in series.components:
            if isinstance(adapter.start, datetime):
                continue
            for text in adapter.rrules:
                rule = icalendar.vRecur.from_ical(text)
                freq = str(rule.get("FREQ", [""])[0]).upper()
                if freq in ("HOURLY", "MINUTELY", "SECONDLY") or _WITHIN_A_DAY & set(rule):
                    return True
    except Exception:
        # What this cannot read is expanded at each lookup.
        return True
    return False


def _modifications(series: Any) -> list[Any]:
    return list(getattr(series, "modifications", ()) or ())


def _repeats(modification: Any) -> bool:
    has_rules = getattr(modification, "has_recurrence_rules", None)
    return bool(has_rules()) if callable(has_rules) else True

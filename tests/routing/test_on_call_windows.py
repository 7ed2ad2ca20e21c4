"""An iCal schedule's lookups share one expansion of their window of hours: the answers are
those of an expansion of the whole schedule at each moment, and a lookup that gives up leaves
its expansion to the next one."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import icalendar
import pytest
import recurring_ical_events  # type: ignore[import-untyped]
from dateutil import tz as dateutil_tz
from recurring_ical_events.series.rrule import Series  # type: ignore[import-untyped]

from roomkit.routing import ICalOnCall
from roomkit.routing._ical_rules import aware

START = datetime(2027, 1, 4, tzinfo=UTC)
ZONES = ("Europe/Paris", "America/New_York", "Asia/Kolkata")


def named(event: Any) -> str:
    """A shift's person, told apart from every other shift's."""
    return f"{event.get('UID')}|{event.get('SUMMARY')}|{event.get('DTSTART').dt}"


def on_call_everywhere(query: Any, at: datetime) -> str | None:
    """Who is on call at ``at``, from an expansion there of every series of ``query``."""
    current = []
    for event in query.between(at - timedelta(days=1), at + timedelta(seconds=1)):
        if str(event.get("STATUS", "")).upper() == "CANCELLED":
            continue
        starts, ends = (
            event.get(name).dt if event.get(name) else None for name in ("DTSTART", "DTEND")
        )
        starts, ends = (aware(value) for value in (starts, ends))
        if starts is not None and ends is not None and starts <= at < ends:
            current.append((starts, event))
    current.sort(key=lambda found: found[0])
    return named(current[-1][1]) if current else None


def _time(moment: datetime, form: str) -> str:
    if form == "date":
        return f";VALUE=DATE:{moment:%Y%m%d}"
    if form == "utc":
        return f":{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    if form == "floating":
        return f":{moment:%Y%m%dT%H%M%S}"
    return f";TZID={form}:{moment:%Y%m%dT%H%M%S}"


def schedule(seed: int) -> str:
    """A random schedule: rotations daily, weekly and monthly (COUNT, UNTIL, EXDATE, RDATE;
    overrides moved, cancelled, moving the shifts after them, or repeating), all-day shifts,
    shifts in zones and floating ones, single shifts laid over them."""
    chance = random.Random(seed)
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//roomkit tests//EN"]
    for number in range(chance.randrange(3, 14)):
        form = chance.choice(["date", "utc", "floating", *ZONES])
        begins = START + timedelta(days=chance.randrange(-20, 10), hours=chance.randrange(24))
        if form == "date":
            begins = begins.replace(hour=0)
        step = chance.choice([1, 2, 7])
        lasts = (
            timedelta(days=chance.choice([1, 2]))
            if form == "date"
            else timedelta(hours=chance.choice([1, 6, 8, 12, 24, 30]))
        )
        rule = chance.choice(
            [
                f"RRULE:FREQ=DAILY;INTERVAL={step}",
                f"RRULE:FREQ=WEEKLY;INTERVAL={step};BYDAY=MO,TH",
                "RRULE:FREQ=DAILY;BYDAY=FR",
                "RRULE:FREQ=MONTHLY;BYMONTHDAY=5,20",
            ]
        )
        ending = chance.random()
        if ending < 0.3:
            rule += f";COUNT={chance.randrange(1, 30)}"
        elif ending < 0.6:
            until = begins.astimezone(UTC) + timedelta(days=chance.randrange(1, 40))
            rule += f";UNTIL={until:%Y%m%dT%H%M%SZ}"
            if form == "date":
                rule = rule[: rule.rindex("T")]
        uid = f"rotation-{number}"
        lines += [
            "BEGIN:VEVENT",
            f"UID:{uid}",
            f"SUMMARY:person {number}",
            f"DTSTART{_time(begins, form)}",
            f"DTEND{_time(begins + lasts, form)}",
            rule,
        ]
        lines += [
            f"EXDATE{_time(begins + timedelta(days=step * chance.randrange(1, 15)), form)}"
            for _ in range(chance.randrange(3))
        ]
        if chance.random() < 0.2:
            lines.append(f"RDATE{_time(begins + timedelta(days=chance.randrange(40, 60)), form)}")
        lines.append("END:VEVENT")
        for _ in range(chance.randrange(3)):
            replaced = begins + timedelta(days=step * chance.randrange(0, 15))
            moved = replaced + timedelta(hours=0 if form == "date" else chance.randrange(-30, 30))
            lines += [
                "BEGIN:VEVENT",
                f"UID:{uid}",
                f"SUMMARY:override of {number}",
                f"RECURRENCE-ID{';RANGE=THISANDFUTURE' if chance.random() < 0.1 else ''}"
                f"{_time(replaced, form)}",
                f"DTSTART{_time(moved, form)}",
                f"DTEND{_time(moved + lasts, form)}",
                *(["STATUS:CANCELLED"] if chance.random() < 0.2 else []),
                *(["RRULE:FREQ=DAILY;COUNT=2"] if chance.random() < 0.1 else []),
                "END:VEVENT",
            ]
    for number in range(chance.randrange(6)):
        # Laid over the rotations, some starting with one of them.
        begins = START + timedelta(days=chance.randrange(-5, 30), hours=chance.randrange(24))
        lines += [
            "BEGIN:VEVENT",
            f"UID:single-{number}",
            f"SUMMARY:single {number}",
            f"DTSTART{_time(begins, 'utc')}",
            f"DTEND{_time(begins + timedelta(hours=chance.choice([2, 8, 50])), 'utc')}",
            "END:VEVENT",
        ]
    lines.append("END:VCALENDAR")
    return "\r\n".join(lines) + "\r\n"


def moments(chance: random.Random, query: Any) -> Iterator[datetime]:
    """Moments around the schedule: at random, and on every shift's start and end."""
    for _ in range(40):
        yield START + timedelta(minutes=chance.randrange(-30 * 1440, 60 * 1440))
    for event in query.between(START - timedelta(days=30), START + timedelta(days=60)):
        for name in ("DTSTART", "DTEND"):
            moment = aware(event.get(name).dt) if event.get(name) else None
            if moment is not None:
                yield moment
                yield moment - timedelta(seconds=1)


@pytest.mark.parametrize("seed", range(16))
async def test_a_lookup_names_whom_an_expansion_of_the_whole_schedule_names(
    seed: int, tmp_path: Path
) -> None:
    path = tmp_path / "schedule.ics"
    path.write_text(schedule(seed))
    on_call = ICalOnCall(path, person=named)
    query = recurring_ical_events.of(
        icalendar.Calendar.from_ical(path.read_bytes()), skip_bad_series=True
    )
    chance = random.Random(seed)
    for moment in moments(chance, query):
        if chance.random() < 0.3:
            # Asked in a zone: floating shifts are read in it.
            moment = moment.astimezone(ZoneInfo(chance.choice(ZONES)))
        assert await on_call.on_call_at(moment) == on_call_everywhere(query, moment), moment


@pytest.fixture
def expansions(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The start of each expansion of a recurring series (the library's own count)."""
    started: list[datetime] = []
    between = Series.between

    def counted(self: Any, span_start: Any, span_stop: Any) -> Any:
        started.append(span_start)
        return between(self, span_start, span_stop)

    monkeypatch.setattr(Series, "between", counted)
    return started


ROTATION = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//roomkit tests//EN
BEGIN:VEVENT
UID:rotation
SUMMARY:alice
DTSTART:20270101T080000Z
DTEND:20270101T200000Z
RRULE:FREQ=DAILY
END:VEVENT
BEGIN:VEVENT
UID:night
SUMMARY:bob
DTSTART:20270101T200000Z
DTEND:20270102T080000Z
RRULE:FREQ=DAILY
END:VEVENT
END:VCALENDAR
"""


async def test_lookups_within_hours_expand_the_schedule_once(
    tmp_path: Path, expansions: list[datetime]
) -> None:
    path = tmp_path / "schedule.ics"
    path.write_text(ROTATION)
    on_call = ICalOnCall(path)
    moment = datetime(2027, 3, 1, 19, 0, tzinfo=UTC)
    assert await on_call.on_call_at(moment) == "alice"
    first = len(expansions)
    assert await on_call.on_call_at(moment + timedelta(minutes=61)) == "bob"
    assert await on_call.on_call_at(moment + timedelta(minutes=30)) == "alice"
    assert len(expansions) == first, "lookups in the same hours reuse the expansion"


async def test_a_lookup_given_up_leaves_its_expansion_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "schedule.ics"
    path.write_text(ROTATION)
    on_call = ICalOnCall(path)
    entered, go_on = threading.Event(), threading.Event()
    started: list[object] = []
    between = Series.between

    def held(self: Any, span_start: Any, span_stop: Any) -> Any:
        started.append(span_start)
        entered.set()
        go_on.wait(timeout=30)
        return between(self, span_start, span_stop)

    monkeypatch.setattr(Series, "between", held)
    moment = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)
    first = asyncio.ensure_future(on_call.on_call_at(moment))
    await asyncio.to_thread(entered.wait, 30)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.ensure_future(on_call.on_call_at(moment + timedelta(minutes=1)))
    go_on.set()
    assert await second == "alice"
    # One expansion for both, each series once: the one given up served the second lookup.
    assert len(started) == 2


DAY_AND_NIGHT = "\r\n".join(
    [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//roomkit tests//EN",
        "BEGIN:VEVENT",
        "UID:day",
        "SUMMARY:alice",
        "DTSTART;TZID=Europe/Paris:20270101T080000",
        "DTEND;TZID=Europe/Paris:20270101T200000",
        "RRULE:FREQ=DAILY",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:night",
        "SUMMARY:bob",
        "DTSTART;TZID=Europe/Paris:20270101T200000",
        "DTEND;TZID=Europe/Paris:20270102T080000",
        "RRULE:FREQ=DAILY",
        "END:VEVENT",
        "END:VCALENDAR",
        "",
    ]
)


@pytest.mark.parametrize("minute", [0, 30, 59])
async def test_the_night_over_the_autumn_change_lasts_its_thirteenth_hour(
    tmp_path: Path, minute: int
) -> None:
    path = tmp_path / "schedule.ics"
    path.write_text(DAY_AND_NIGHT)
    # 20:00 CEST (18:00Z) to 08:00 CET (07:00Z): 13 hours, 12 on the wall clock.
    moment = datetime(2027, 10, 31, 6, minute, tzinfo=UTC)
    assert await ICalOnCall(path).on_call_at(moment) == "bob"
    assert await ICalOnCall(path).on_call_at(moment + timedelta(hours=1)) == "alice"


@pytest.mark.parametrize(
    "zone",
    [dateutil_tz.gettz("Europe/Paris"), dateutil_tz.tzutc(), dateutil_tz.tzoffset(None, 3600)],
)
async def test_a_moment_in_a_dateutil_zone_is_looked_up(tmp_path: Path, zone: Any) -> None:
    path = tmp_path / "schedule.ics"
    path.write_text(DAY_AND_NIGHT)
    on_call = ICalOnCall(path)
    assert await on_call.on_call_at(datetime(2027, 3, 1, 12, tzinfo=zone)) == "alice"
    assert await on_call.on_call_at(datetime(2027, 3, 1, 12, 30, tzinfo=zone)) == "alice"
    assert await on_call.on_call_at(datetime(2027, 3, 1, 21, tzinfo=zone)) == "bob"


async def answers_as_everywhere(path: Path, text: str, moments: list[datetime]) -> None:
    """Each lookup of ``text`` (the schedule at ``path``) at ``moments`` names whom an
    expansion of the whole schedule names there."""
    on_call = ICalOnCall(path, person=named)
    query = recurring_ical_events.of(icalendar.Calendar.from_ical(text))
    for moment in moments:
        assert await on_call.on_call_at(moment) == on_call_everywhere(query, moment), moment


async def test_a_period_longer_than_its_event_is_found_as_everywhere(tmp_path: Path) -> None:
    text = "\r\n".join(
        [
            "BEGIN:VCALENDAR",
            "VERSION:2.0",
            "PRODID:-//roomkit tests//EN",
            "BEGIN:VEVENT",
            "UID:weekly",
            "SUMMARY:alice",
            "DTSTART:20270104T090000Z",
            "DTEND:20270104T100000Z",
            "RRULE:FREQ=WEEKLY",
            # A cover of 48 hours.
            "RDATE;VALUE=PERIOD:20270301T000000Z/PT48H",
            "END:VEVENT",
            "END:VCALENDAR",
            "",
        ]
    )
    cover = datetime(2027, 3, 1, tzinfo=UTC)
    hours = (12, 24, 25, 26, 27, 30, 31, 32, 36, 47)
    (tmp_path / "schedule.ics").write_text(text)
    await answers_as_everywhere(
        tmp_path / "schedule.ics", text, [cover + timedelta(hours=hour) for hour in hours]
    )


@pytest.mark.parametrize(
    "rule", ["FREQ=DAILY;BYHOUR=8,20", "FREQ=DAILY;BYMINUTE=30", "FREQ=HOURLY;INTERVAL=6"]
)
async def test_all_day_shifts_repeated_within_a_day_are_found_as_everywhere(
    tmp_path: Path, rule: str
) -> None:
    text = "\r\n".join(
        [
            "BEGIN:VCALENDAR",
            "VERSION:2.0",
            "PRODID:-//roomkit tests//EN",
            "BEGIN:VEVENT",
            "UID:days",
            "SUMMARY:alice",
            "DTSTART;VALUE=DATE:20270120",
            "DTEND;VALUE=DATE:20270121",
            f"RRULE:{rule}",
            "END:VEVENT",
            "END:VCALENDAR",
            "",
        ]
    )
    (tmp_path / "schedule.ics").write_text(text)
    around = datetime(2027, 3, 27, 7, 25, tzinfo=UTC)
    moments = [around + timedelta(hours=hours) for hours in range(-30, 30, 5)]
    await answers_as_everywhere(tmp_path / "schedule.ics", text, moments)

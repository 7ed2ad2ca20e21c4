"""On-call sources answering badly: a shift naming no one who could sign in, a PagerDuty
answer with malformed entries among good ones, a PagerDuty API that trickles its answer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from routing_clock import FakeClock

from roomkit.people import Directory, Person, on_call
from roomkit.routing import ICalOnCall, PagerDutyOnCall
from roomkit.tools.human_input import HumanInputHandler

PEOPLE = {name: Person(email=f"{name}@example.com") for name in ("alice", "bob")}
NOON = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


@asynccontextmanager
async def serving(
    path: str, answer: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> AsyncIterator[str]:
    """An HTTP server on the loopback answering GET ``path`` with ``answer``; its base URL."""
    app = web.Application()
    app.router.add_get(path, answer)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def handler_for(source: Any) -> HumanInputHandler:
    handler = HumanInputHandler(directory=Directory(PEOPLE, on_call={"payments": source}))
    assert handler.router is not None
    handler.router.clock = FakeClock(NOON)
    return handler


def calendar(tmp_path: Path, event: str) -> Path:
    path = tmp_path / "payments.ics"
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\n"
        f"{event}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    return path


@pytest.mark.parametrize(
    "who",
    ["ATTENDEE:mailto: bob@example.com", "SUMMARY:" + "a" * 300, "SUMMARY:al\\u0000ice"],
    ids=["spaced attendee", "overlong summary", "NUL in summary"],
)
async def test_a_shift_naming_no_actor_assigns_nobody_and_says_so(
    tmp_path: Path, who: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A shift whose person is empty or no actor name is not assigned: no one could sign
    in as it, and the request would wait on nobody with no word of why."""
    event = f"UID:s1\r\n{who}\r\nDTSTART:20261201T000000Z\r\nDTEND:20261231T000000Z"
    path = calendar(tmp_path, event.replace("\\u0000", "\x00"))
    handler = handler_for(ICalOnCall(path))
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        request = await handler.create_approval("pay", {}, approvers=[on_call("payments")])
    history = await handler.history(request.pending_id)
    assert [e for e in history if e.get("surface") == "routing"] == []
    assert any("on-call schedule 'payments' names someone who" in r.message for r in caplog.records)


async def test_pagerduty_naming_someone_by_a_number_does_not_fail_the_request() -> None:
    async def oncalls(request: web.Request) -> web.Response:
        entry = {"user": {"email": 12345}, "escalation_level": 1}
        return web.json_response({"oncalls": [entry]})

    async with serving("/oncalls", oncalls) as base:
        handler = handler_for(PagerDutyOnCall("tok", "PSCHED1", base_url=base))
        request = await handler.create_approval("pay", {}, approvers=[on_call("payments")])
    assert handler.router is not None
    assert await handler.router.recipients(request) == ()


BOB_ON_CALL = {
    "user": {"summary": "Bob", "email": "bob@example.com"},
    "escalation_level": 1,
    "start": "2026-12-05T00:00:00Z",
    "end": "2026-12-06T00:00:00Z",
}


async def test_a_malformed_pagerduty_entry_leaves_the_others_standing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An answer holding entries of the wrong shape (a proxy's, an API change) still names
    whoever its good entries put on call; each bad one is named in a warning."""
    bad: list[Any] = [
        "not an entry",
        {**BOB_ON_CALL, "user": "alice@example.com"},
        {**BOB_ON_CALL, "user": {"email": "alice@example.com"}, "start": "yesterday"},
        {**BOB_ON_CALL, "user": {"email": "alice@example.com"}, "escalation_level": "top"},
        {**BOB_ON_CALL, "user": {"email": "alice@example.com"}, "end": 1764892800},
    ]

    async def oncalls(request: web.Request) -> web.Response:
        return web.json_response({"oncalls": [*bad, BOB_ON_CALL]})

    async with serving("/oncalls", oncalls) as base:
        handler = handler_for(PagerDutyOnCall("tok", "PSCHED1", base_url=base))
        with caplog.at_level("WARNING", logger="roomkit.routing"):
            request = await handler.create_approval("pay", {}, approvers=[on_call("payments")])
            assert handler.router is not None
            assert await handler.router.recipients(request) == ("bob",)
    skipped = [r.getMessage() for r in caplog.records if "skipping on-call entry" in r.getMessage()]
    assert [message.split(": ")[2] for message in skipped] == [
        f"skipping on-call entry {index}" for index in range(len(bad))
    ]


async def test_pagerduty_trickling_its_answer_is_given_up_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server sending a byte now and then never trips a read's timeout: the answer as a
    whole is bounded, or the routing waiting on it (a request's creation) would hang."""
    from roomkit.routing import pagerduty

    released = asyncio.Event()

    async def oncalls(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        while not released.is_set():
            await response.write(b" ")
            # A byte every tenth of a second, far inside each read's timeout.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(released.wait(), 0.1)
        return response

    monkeypatch.setattr(pagerduty, "_FETCH", 1.0, raising=False)
    async with serving("/oncalls", oncalls) as base:
        source = PagerDutyOnCall("tok", "PSCHED1", base_url=base)
        try:
            # The guard only ends the test when the answer is never given up on.
            async with asyncio.timeout(60):
                with pytest.raises(TimeoutError, match=r"PagerDuty took longer than 1 s"):
                    await source.on_call_at(NOON)
        finally:
            released.set()


async def test_a_shift_repeating_every_second_is_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Working out a rule repeating by the second steps through every repeat since it
    began (hours of a worker thread for one started years ago, at every routing): its
    series is left out with a warning, and the rest of the schedule stands."""
    path = tmp_path / "payments.ics"
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
        "BEGIN:VEVENT\r\nUID:alice\r\nSUMMARY:alice\r\n"
        "DTSTART:20261201T000000Z\r\nDTEND:20261231T000000Z\r\nEND:VEVENT\r\n"
        "BEGIN:VEVENT\r\nUID:flood\r\nSUMMARY:bob\r\n"
        "DTSTART:20261205T000000Z\r\nDTEND:20261205T000001Z\r\n"
        "RRULE:FREQ=SECONDLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        assert await ICalOnCall(path).on_call_at(NOON) == "alice"
    assert any("'flood': they repeat more often than hourly" in r.message for r in caplog.records)


def _flooded(tmp_path: Path, start: str, rule: str) -> Path:
    """A schedule with alice on call all month, and bob's series starting at ``start``
    repeating by ``rule``, each repeat half an hour long."""
    path = tmp_path / "payments.ics"
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
        "BEGIN:VEVENT\r\nUID:alice\r\nSUMMARY:alice\r\n"
        "DTSTART:20261201T000000Z\r\nDTEND:20261231T000000Z\r\nEND:VEVENT\r\n"
        f"BEGIN:VEVENT\r\nUID:flood\r\nSUMMARY:bob\r\nDTSTART:{start}T000000Z\r\n"
        f"DTEND:{start}T003000Z\r\nRRULE:{rule}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    return path


MINUTES = ",".join(str(minute) for minute in range(60))


@pytest.mark.parametrize(
    ("start", "rule", "said"),
    [
        # An hourly rule naming every minute repeats by the minute as FREQ=MINUTELY does.
        ("20240101", f"FREQ=HOURLY;BYMINUTE={MINUTES}", "'flood': they repeat more often"),
        # An hourly rule begun decades ago is worked out from its start at every lookup.
        ("19900101", "FREQ=HOURLY", "a recent DTSTART"),
        # INTERVAL=0 steps through the same instant for ever (a worker thread that never
        # ends, at every routing); a negative one fails every lookup.
        ("20261201", "FREQ=DAILY;INTERVAL=0", "'flood': their INTERVAL"),
        ("20261201", "FREQ=DAILY;INTERVAL=-1", "'flood': their INTERVAL"),
    ],
    ids=["split by the minute", "begun long ago", "INTERVAL=0", "negative INTERVAL"],
)
async def test_a_rule_no_lookup_can_afford_is_left_out(
    tmp_path: Path, start: str, rule: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Bob's series is left out with a warning saying why, and the rest of the schedule
    stands."""
    path = _flooded(tmp_path, start, rule)
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        assert await ICalOnCall(path).on_call_at(NOON) == "alice"
    assert any(said in r.message for r in caplog.records)


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("garbage", "the RRULE of the shift 'bob' names no FREQ"),
        ("FREQ=MONTHLY;BYMONTH=13", "RRULE:'FREQ=MONTHLY;BYMONTH=13' of the shift 'bob'"),
        ("FREQ=YEARLY;BYMONTHDAY=40", "has BYMONTHDAY=40, outside 1 to 31"),
    ],
    ids=["no rule", "a thirteenth month", "a fortieth day"],
)
async def test_a_rule_that_is_no_rule_leaves_its_series_out(
    tmp_path: Path, rule: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Bob's series is not taken as one shift at its start: it is left out with one
    warning naming it and its rule, and alice's shift stands."""
    schedule = ICalOnCall(_flooded(tmp_path, "20261205", rule))
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        for _ in range(2):
            assert await schedule.on_call_at(datetime(2026, 12, 5, 0, 15, tzinfo=UTC)) == "alice"
    warned = [r.getMessage() for r in caplog.records if "flood" in r.getMessage()]
    assert len(warned) == 1, warned
    assert said in warned[0]


async def test_a_shift_the_libraries_cannot_work_out_leaves_the_rest_standing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A shift lasting past the year 9999 fails as it is worked out: that series is left
    out, named in one warning, and the others still say who is on call."""
    path = tmp_path / "payments.ics"
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
        "BEGIN:VEVENT\r\nUID:alice\r\nSUMMARY:alice\r\n"
        "DTSTART:20261201T000000Z\r\nDTEND:20261231T000000Z\r\nEND:VEVENT\r\n"
        "BEGIN:VEVENT\r\nUID:endless\r\nSUMMARY:bob\r\n"
        "DTSTART:20261201T000000Z\r\nDURATION:P99999999W\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    schedule = ICalOnCall(path)
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        for _ in range(2):
            assert await schedule.on_call_at(NOON) == "alice"
    warned = [r.getMessage() for r in caplog.records if "endless" in r.getMessage()]
    assert len(warned) == 1, warned


async def test_an_hourly_shift_counted_from_long_ago_stands(tmp_path: Path) -> None:
    """A rule whose COUNT ends it soon is cheap however long ago it began: it stands."""
    path = _flooded(tmp_path, "19900101", "FREQ=HOURLY;COUNT=3")
    assert await ICalOnCall(path).on_call_at(NOON) == "alice"
    path = _flooded(tmp_path, "20261205", "FREQ=HOURLY")
    assert await ICalOnCall(path).on_call_at(NOON) == "bob"


@pytest.mark.parametrize(
    ("who", "person"),
    [("ATTENDEE:mailto:\r\nSUMMARY:alice", "alice"), ("ATTENDEE:mailto:", None)],
    ids=["with a summary", "without"],
)
async def test_an_attendee_with_no_address_counts_as_none(
    tmp_path: Path, who: str, person: str | None
) -> None:
    """An ``ATTENDEE`` of a bare ``mailto:`` names no one: the shift's person is its
    summary, as for a shift with no attendee, or nobody."""
    event = f"UID:s1\r\n{who}\r\nDTSTART:20261201T000000Z\r\nDTEND:20261231T000000Z"
    assert await ICalOnCall(calendar(tmp_path, event)).on_call_at(NOON) == person


@pytest.mark.parametrize(
    "end",
    ["DTEND:20261201T000000Z", "DTEND;VALUE=DATE:20261201", "DURATION:-P9D"],
    ids=["DTEND", "all-day DTEND", "negative DURATION"],
)
async def test_a_shift_ending_before_it_starts_is_left_out(
    tmp_path: Path, end: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A shift from 10 December whose end is before its start puts nobody on call on the
    5th (the libraries would swap its ends): it is left out with a warning naming it."""
    event = f"UID:backwards\r\nSUMMARY:bob\r\nDTSTART:20261210T000000Z\r\n{end}"
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        assert await ICalOnCall(calendar(tmp_path, event)).on_call_at(NOON) is None
    assert any("'backwards': they end before they start" in r.message for r in caplog.records)


def _zoned(tmp_path: Path, name: str, rule: str, tzid: str = "Payments/Desk") -> Path:
    """A schedule with alice on call all month in UTC, and bob's shift on 5 December in
    the timezone ``tzid`` (+01:00) whose ``STANDARD`` and ``DAYLIGHT`` parts repeat by
    ``rule`` from ``DTSTART`` ``rule[0]``."""
    start, repeat = rule.split("\r\n", 1) if "\r\n" in rule else (rule, "")
    parts = "".join(
        f"BEGIN:{part}\r\n{start}\r\n{repeat + chr(13) + chr(10) if repeat else ''}"
        f"TZOFFSETFROM:+0100\r\nTZOFFSETTO:+0100\r\nEND:{part}\r\n"
        for part in ("STANDARD", "DAYLIGHT")
    )
    path = tmp_path / name
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
        f"BEGIN:VTIMEZONE\r\nTZID:{tzid}\r\n{parts}END:VTIMEZONE\r\n"
        "BEGIN:VEVENT\r\nUID:alice\r\nSUMMARY:alice\r\n"
        "DTSTART:20261201T000000Z\r\nDTEND:20261231T000000Z\r\nEND:VEVENT\r\n"
        f"BEGIN:VEVENT\r\nUID:zoned\r\nSUMMARY:bob\r\nDTSTART;TZID={tzid}:20261205T080000\r\n"
        f"DTEND;TZID={tzid}:20261205T180000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    return path


@pytest.mark.parametrize(
    ("zone", "said"),
    [
        # Every offset since the year 1, stepped through at every lookup: hours of a thread.
        ("DTSTART:00010101T000000\r\nRRULE:FREQ=HOURLY", "over 10000 times"),
        ("DTSTART:20260101T000000\r\nRRULE:FREQ=MINUTELY", "over 10000 times"),
        ("DTSTART:20260101T000000\r\nRRULE:FREQ=DAILY;INTERVAL=0", "never move on"),
    ],
    ids=["hourly since the year 1", "by the minute", "INTERVAL=0"],
)
async def test_a_timezone_no_lookup_can_afford_is_refused(
    tmp_path: Path, zone: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The shifts in a timezone whose rules no lookup can afford are left out, named in a
    warning saying why, and the rest of the schedule stands; the next schedule defining a
    zone of that name is read in its own zone, not the refused one."""
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        # The guard only ends the test when a lookup works the zone out.
        async with asyncio.timeout(60):
            schedule = ICalOnCall(_zoned(tmp_path, "refused.ics", zone))
            assert await schedule.on_call_at(NOON) == "alice"
    assert any(
        "UID 'zoned': their times are in the timezone 'Payments/Desk'" in r.message
        and said in r.message
        for r in caplog.records
    )
    yearly = "DTSTART:16010101T000000\r\nRRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU"
    async with asyncio.timeout(60):
        fixed = ICalOnCall(_zoned(tmp_path, "fixed.ics", yearly))
        # Bob's shift is 08:00-18:00 at +01:00: noon UTC is in it.
        assert await fixed.on_call_at(NOON) == "bob"


async def test_a_timezone_the_schedule_does_not_define_is_read_as_utc(tmp_path: Path) -> None:
    """A TZID no ``VTIMEZONE`` of the schedule defines is read as UTC, whatever zone of
    that name another schedule of the process defined."""
    other = _zoned(tmp_path, "other.ics", "DTSTART:20260101T000000", tzid="Shared/Desk")
    assert await ICalOnCall(other).on_call_at(NOON) == "bob"
    path = tmp_path / "payments.ics"
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
        "BEGIN:VEVENT\r\nUID:bob\r\nSUMMARY:bob\r\nDTSTART;TZID=Shared/Desk:20261205T113000\r\n"
        "DTEND;TZID=Shared/Desk:20261205T123000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    # Read at +01:00 (the other schedule's zone) the shift would end at 11:30 UTC.
    assert await ICalOnCall(path).on_call_at(NOON) == "bob"


ALICE_ALL_DECEMBER = (
    "UID:alice\r\nSUMMARY:alice\r\nDTSTART:20261201T000000Z\r\nDTEND:20261231T000000Z"
)


@pytest.mark.parametrize(
    "times",
    [
        "DTSTART:someday\r\nDTEND:20261206T000000Z",
        "DTSTART:20261205T000000Z\r\nDTEND:someday",
        "DTSTART:20261205T000000Z\r\nDURATION:a while",
        "DTSTART:20261201T000000Z\r\nDTEND:20261202T000000Z\r\nRRULE:FREQ=DAILY\r\nEXDATE:someday",
        "DTSTART:20261201T000000Z\r\nDTEND:20261202T000000Z\r\nRDATE:someday",
        "RECURRENCE-ID:someday\r\nDTSTART:20261205T000000Z\r\nDTEND:20261206T000000Z",
        "DTSTART;VALUE=PERIOD:20261205T000000Z/PT9H\r\nDTEND:20261206T000000Z",
    ],
    ids=["DTSTART", "DTEND", "DURATION", "EXDATE", "RDATE", "RECURRENCE-ID", "PERIOD start"],
)
async def test_a_shift_whose_times_cannot_be_read_leaves_the_rest_standing(
    tmp_path: Path, times: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A shift holding a date or time that does not parse is left out, named in a
    warning, and the rest of the schedule stands."""
    event = f"{ALICE_ALL_DECEMBER}\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:unreadable\r\n"
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        schedule = ICalOnCall(calendar(tmp_path, event + f"SUMMARY:bob\r\n{times}"))
        assert await schedule.on_call_at(NOON) == "alice"
    assert any(
        "UID 'unreadable': a date or time of theirs cannot be read" in r.message
        for r in caplog.records
    )


@pytest.mark.parametrize(
    "parts",
    [
        "BEGIN:STANDARD\r\nDTSTART:20260101T000000\r\nTZOFFSETTO:+0100\r\nEND:STANDARD\r\n",
        "BEGIN:STANDARD\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0100\r\nEND:STANDARD\r\n",
        "",
    ],
    ids=["no TZOFFSETFROM", "no DTSTART", "no parts"],
)
async def test_a_timezone_that_cannot_be_read_is_refused(
    tmp_path: Path, parts: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A feed read again whose ``VTIMEZONE`` lost what icalendar builds a zone of: the
    shifts in it are left out, named in a warning with the zone, and the rest of the
    schedule stands."""
    # Read well once, the zone is the process's: icalendar builds it no more as it parses.
    assert (
        await ICalOnCall(_zoned(tmp_path, "before.ics", "DTSTART:20260101T000000")).on_call_at(NOON)
        == "bob"
    )
    path = tmp_path / "payments.ics"
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
        f"BEGIN:VTIMEZONE\r\nTZID:Payments/Desk\r\n{parts}END:VTIMEZONE\r\n"
        f"BEGIN:VEVENT\r\n{ALICE_ALL_DECEMBER}\r\nEND:VEVENT\r\n"
        "BEGIN:VEVENT\r\nUID:zoned\r\nSUMMARY:bob\r\n"
        "DTSTART;TZID=Payments/Desk:20261205T080000\r\n"
        "DTEND;TZID=Payments/Desk:20261205T180000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        assert await ICalOnCall(path).on_call_at(NOON) == "alice"
    assert any(
        "UID 'zoned': their times are in the timezone 'Payments/Desk', which is refused: it "
        "cannot be read" in r.message
        for r in caplog.records
    )


async def test_a_schedule_file_removed_for_a_while_leaves_the_schedule_read_before(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """While the file is gone, the schedule read before stands (said once); the file
    written again is read."""
    path = calendar(tmp_path, ALICE_ALL_DECEMBER)
    schedule = ICalOnCall(path)
    path.unlink()
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        for _ in range(2):
            assert await schedule.on_call_at(NOON) == "alice"
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1, warned
    assert "the schedule read before stands until the file is back" in warned[0]
    calendar(tmp_path, ALICE_ALL_DECEMBER.replace("alice", "bob"))
    assert await schedule.on_call_at(NOON) == "bob"

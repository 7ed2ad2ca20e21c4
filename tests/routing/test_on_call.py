"""On-call approvers: an iCal schedule (overrides, a daylight-saving change), PagerDuty's
API on a loopback stub, and a shift change while a request waits."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from routing_clock import FakeClock

from roomkit import RoomKit
from roomkit._extras import install_command
from roomkit.desk import create_desk_app, issue_token
from roomkit.people import Directory, Person, on_call
from roomkit.routing import ICalOnCall, PagerDutyOnCall, Router
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

SCHEDULE = Path(__file__).parent / "fixtures" / "payments.ics"
SECRET = "routing-tests-secret-0123456789abcdef"
APPROVE = {"decision": "approve"}
PEOPLE = {name: Person(email=f"{name}@example.com") for name in ("alice", "bob", "carol", "dave")}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_the_schedule_names_who_is_on_call_across_the_daylight_saving_change() -> None:
    schedule = ICalOnCall(SCHEDULE)
    # Shifts start at 09:00 in Paris: 08:00 UTC before 28 March 2027, 07:00 UTC after.
    assert await schedule.on_call_at(at("2027-03-27T07:59:00")) == "bob@example.com"
    assert await schedule.on_call_at(at("2027-03-27T08:00:00")) == "alice@example.com"
    assert await schedule.on_call_at(at("2027-03-29T06:59:00")) == "bob@example.com"
    assert await schedule.on_call_at(at("2027-03-29T07:00:00")) == "alice@example.com"
    assert await schedule.on_call_at(at("2027-03-24T12:00:00")) is None, "before the first"


async def test_an_override_replaces_one_shift() -> None:
    schedule = ICalOnCall(SCHEDULE)
    assert await schedule.on_call_at(at("2027-03-31T12:00:00")) == "carol@example.com"
    assert await schedule.on_call_at(at("2027-04-02T12:00:00")) == "alice@example.com"


async def test_an_override_laid_over_the_rotation_wins_while_it_lasts() -> None:
    """PagerDuty and Grafana export an override as an event of its own over the shift."""
    schedule = ICalOnCall(SCHEDULE)
    # 3 April (summer time): Bob's shift from 07:00 UTC, Dave over it from 11:00 to 13:00.
    assert await schedule.on_call_at(at("2027-04-03T10:59:00")) == "bob@example.com"
    assert await schedule.on_call_at(at("2027-04-03T11:00:00")) == "dave@example.com"
    assert await schedule.on_call_at(at("2027-04-03T12:59:00")) == "dave@example.com"
    assert await schedule.on_call_at(at("2027-04-03T13:00:00")) == "bob@example.com"


async def test_the_desk_lets_the_shift_before_read_and_the_new_one_decide() -> None:
    clock = FakeClock(at("2027-03-27T12:00:00"))
    handler = HumanInputHandler(
        directory=Directory(PEOPLE, on_call={"payments": ICalOnCall(SCHEDULE)})
    )
    assert handler.router is not None
    handler.router.clock = clock
    request = await handler.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    path = f"/api/requests/{request.pending_id}"
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as desk:
        clock.now = at("2027-03-28T12:00:00")
        seen = await desk.get(path, headers=bearer("alice"))
        refused = await desk.post(f"{path}/answer", json=APPROVE, headers=bearer("alice"))
        outsider = await desk.get(path, headers=bearer("dave"))
        decided = await desk.post(f"{path}/answer", json=APPROVE, headers=bearer("bob"))
    assert seen.status_code == 200
    assert seen.json()["deciding"] == ["bob"]
    assert refused.status_code == 403
    assert outsider.status_code == 404
    assert decided.status_code == 200, decided.text
    assert decided.json()["settled_by"] == "bob"


async def test_the_shift_before_may_read_a_question_but_not_answer_it() -> None:
    """A question escalated to whoever is on call: once the shift changes, the person
    whose shift ended reads it and may not answer it; the new one and its asker may."""
    clock = FakeClock(at("2027-03-27T12:00:00"))
    handler = HumanInputHandler(
        directory=Directory(PEOPLE, on_call={"payments": ICalOnCall(SCHEDULE)})
    )
    assert handler.router is not None
    handler.router.clock = clock
    asked = await handler.create("ask_user", {"question": "Which account?"}, actor_id="zed")
    await handler.add_approvers(asked.pending_id, [on_call("payments")], surface="ladder")
    path = f"/api/requests/{asked.pending_id}"
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as desk:
        assert (await desk.get(path, headers=bearer("alice"))).json()["deciding"] == [
            "zed",
            "alice",
        ]
        clock.now = at("2027-03-28T12:00:00")
        seen = await desk.get(path, headers=bearer("alice"))
        refused = await desk.post(f"{path}/answer", json={"answer": "a"}, headers=bearer("alice"))
        answered = await desk.post(f"{path}/answer", json={"answer": "b"}, headers=bearer("bob"))
    assert seen.status_code == 200
    assert refused.status_code == 403, refused.text
    assert refused.json()["detail"] == (
        "This question is with someone else now: you may read it, not answer it"
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["settled_by"] == "bob"


async def test_a_shift_change_while_the_request_waits_moves_it() -> None:
    clock = FakeClock(at("2027-03-27T12:00:00"))
    handler = HumanInputHandler(
        directory=Directory(PEOPLE, on_call={"payments": ICalOnCall(SCHEDULE)})
    )
    router = handler.router
    assert router is not None
    router.clock = clock
    request = await handler.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    assert await router.recipients(request) == ("alice",)
    clock.now = at("2027-03-28T12:00:00")
    assert await router.may_decide(request, "bob")
    assert not await router.may_decide(request, "alice")
    assert await router.may_see(request, "alice"), "the shift before keeps read access"
    assert not await router.may_see(request, "dave")
    routed = [e for e in await handler.history(request.pending_id) if e["surface"] == "routing"]
    assert [(e["approvers"], e["reason"], e.get("replaces")) for e in routed] == [
        (["alice"], "on call", None),
        (["bob"], "shift change", "alice"),
    ]
    items = await handler.outbox.items_for(request.pending_id)
    assert [item.body for item in items if item.body.get("job") == "reassign"] == [
        {"job": "reassign", "to": "bob"}
    ]
    assert await handler.aresolve(request.pending_id, approve(), by="bob")
    decided = [e for e in await handler.history(request.pending_id) if e["type"] == "decided"]
    assert decided[0]["actor"] == "bob"
    assert decided[0]["on_behalf_of"] == "on-call:payments"
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    clock.now = at("2027-03-29T12:00:00")
    assert await router.may_see(settled, "bob"), "a settled request is not moved any more"
    after = [e for e in await handler.history(request.pending_id) if e["surface"] == "routing"]
    assert len(after) == 2


@asynccontextmanager
async def serving(path: str, answer: Any) -> AsyncIterator[str]:
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


@pytest.fixture
async def pagerduty() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def oncalls(request: web.Request) -> web.Response:
        seen.append(
            {
                "auth": request.headers.get("Authorization"),
                "schedules": request.query.getall("schedule_ids[]"),
                "include": request.query.getall("include[]"),
                "since": request.query.get("since"),
            }
        )
        return web.json_response(
            {
                "oncalls": [
                    {
                        "user": {"summary": "Dave", "email": "dave@example.com"},
                        "escalation_level": 2,
                        "start": "2027-03-27T00:00:00Z",
                        "end": "2027-03-28T00:00:00Z",
                    },
                    {
                        "user": {"summary": "Bob", "email": "BOB@example.com"},
                        "escalation_level": 1,
                        "start": "2027-03-27T00:00:00Z",
                        "end": "2027-03-28T00:00:00Z",
                    },
                ]
            }
        )

    async with serving("/oncalls", oncalls) as base:
        yield base, seen


async def test_pagerduty_names_the_first_level(
    pagerduty: tuple[str, list[dict[str, Any]]],
) -> None:
    base, seen = pagerduty
    source = PagerDutyOnCall("tok-123", "PSCHED1", base_url=base)
    handler = HumanInputHandler(directory=Directory(PEOPLE, on_call={"payments": source}))
    assert handler.router is not None
    handler.router.clock = FakeClock(at("2027-03-27T12:00:00"))
    request = await handler.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    assert await handler.router.recipients(request) == ("bob",)
    assert seen[0]["auth"] == "Token token=tok-123"
    assert seen[0]["schedules"] == ["PSCHED1"]
    assert seen[0]["include"] == ["users"]
    assert seen[0]["since"].startswith("2027-03-27T12:00:00")


@pytest.mark.parametrize(
    "url",
    [
        "http://api.pagerduty.com",
        "http://10.0.0.5:8080",
        "HTTP://example.com",
        "https://",
        "ftp://x",
    ],
)
def test_pagerduty_refuses_an_address_the_token_would_cross_in_clear(url: str) -> None:
    with pytest.raises(ValueError, match=r"plain http:// is taken only for this machine"):
        PagerDutyOnCall("tok-123", "PSCHED1", base_url=url)


@pytest.mark.parametrize(
    "url",
    ["https://api.eu.pagerduty.com", "http://127.0.0.1:9", "http://[::1]:9", "http://localhost"],
)
def test_pagerduty_takes_https_or_this_machine(url: str) -> None:
    assert PagerDutyOnCall("tok-123", "PSCHED1", base_url=url).base_url == url


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "icalendar", None)
    with pytest.raises(ImportError, match=r"oncall extra.*" + re.escape(install_command("oncall"))):
        ICalOnCall(SCHEDULE)


def test_pagerduty_without_httpx_names_the_oncall_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The on-call extra is the one to install for PagerDuty, not the desk's."""
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(ImportError, match=r"oncall extra.*" + re.escape(install_command("oncall"))):
        PagerDutyOnCall("tok-123", "PSCHED1")


async def test_a_feed_without_httpx_names_the_oncall_extra(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    feed = ICalOnCall("https://calendar.example/payments.ics")
    handler = HumanInputHandler(directory=Directory(PEOPLE, on_call={"payments": feed}))
    assert handler.router is not None
    request = await handler.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    assert await handler.router.recipients(request) == ()
    assert "ICalOnCall(url) needs the oncall extra" in caplog.text


def bearer(actor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, actor)}"}


async def test_two_processes_seeing_one_shift_change_tell_the_new_person_once() -> None:
    """A desk and a notifier notice the same shift change at once, a second apart on their
    clocks: one notice is owed to the new person."""
    directory = Directory(PEOPLE, on_call={"payments": ICalOnCall(SCHEDULE)})
    handler = HumanInputHandler(directory=directory)
    assert handler.router is not None
    desk_clock = FakeClock(at("2027-03-27T12:00:00"))
    handler.router.clock = desk_clock
    request = await handler.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    notifier_side = Router(directory, handler, FakeClock(at("2027-03-28T12:00:01")))
    desk_clock.now = at("2027-03-28T12:00:00")
    await asyncio.gather(handler.router.refresh(request), notifier_side.refresh(request))
    items = await handler.outbox.items_for(request.pending_id)
    assert [item.body for item in items if item.body.get("job") == "reassign"] == [
        {"job": "reassign", "to": "bob"}
    ]


async def test_a_feed_that_fails_is_not_read_again_at_every_routing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A feed that hangs holds each routing for the read's bound once, then the failure
    stands for a while (and the schedule read before, once there is one): every view of
    the desk would otherwise wait on it again."""
    from roomkit.routing import ical

    served: list[str] = []
    answering, released = asyncio.Event(), asyncio.Event()
    answering.set()
    body = SCHEDULE.read_bytes()

    async def feed(request: web.Request) -> web.StreamResponse:
        served.append(request.path)
        if not answering.is_set():
            await released.wait()  # hangs until the test ends
        return web.Response(body=body, content_type="text/calendar")

    async with serving("/oncall.ics", feed) as base:
        schedule = ICalOnCall(f"{base}/oncall.ics", refresh=0.0)
        first = await schedule.on_call_at(at("2027-03-27T12:00:00+00:00"))
        # Bounded short only once read: the first read, on a busy machine, takes its time;
        # the bound leaves a busy machine time to reach the feed (made a client, connected).
        monkeypatch.setattr(ical, "_FETCH", 1.0)
        answering.clear()
        # The feed hangs now: the schedule read before stands, and is not read again.
        for _ in range(3):
            assert await schedule.on_call_at(at("2027-03-27T12:00:00+00:00")) == first
        assert len(served) == 2
        fresh = ICalOnCall(f"{base}/oncall.ics")
        for _ in range(2):
            with pytest.raises(TimeoutError, match=r"took longer than 1 s"):
                await fresh.on_call_at(at("2027-03-27T12:00:00+00:00"))
        assert len(served) == 3
        released.set()


def calendar(tmp_path: Path, *events: str) -> Path:
    """An .ics file holding ``events`` (each a VEVENT's lines, without BEGIN and END)."""
    body = "".join(f"BEGIN:VEVENT\r\n{event.strip()}\r\nEND:VEVENT\r\n" for event in events)
    path = tmp_path / "payments.ics"
    path.write_text(
        f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n{body}END:VCALENDAR\r\n"
    )
    return path


ALICE_ALL_DECEMBER = """UID:alice
SUMMARY:alice
DTSTART:20261201T000000Z
DTEND:20261231T000000Z"""


async def test_a_malformed_event_is_skipped_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An old event with a rule nobody can expand, or with no start, leaves the rest of
    the schedule standing; each is named in one warning."""
    schedule = ICalOnCall(
        calendar(
            tmp_path,
            ALICE_ALL_DECEMBER,
            "UID:bad-rule\r\nSUMMARY:bob\r\nDTSTART:20200101T000000Z\r\n"
            "DTEND:20200102T000000Z\r\nRRULE:FREQ=SOMETIMES",
            "UID:no-start\r\nSUMMARY:bob\r\nDTEND:20200102T000000Z",
        )
    )
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        for _ in range(2):
            assert await schedule.on_call_at(at("2026-12-05T12:00:00")) == "alice"
    warned = [record.getMessage() for record in caplog.records]
    assert len(warned) == 2, warned
    assert "'no-start': they have no DTSTART" in warned[0]
    assert "bad-rule" in warned[1]


async def test_a_cancelled_shift_puts_nobody_on_call(tmp_path: Path) -> None:
    """A shift of a rotation cancelled by its override, and a cancelled override laid over
    another shift, count for nothing: the shifts under them stand."""
    schedule = ICalOnCall(
        calendar(
            tmp_path,
            "UID:rota\r\nSUMMARY:alice\r\nDTSTART:20261201T000000Z\r\n"
            "DTEND:20261202T000000Z\r\nRRULE:FREQ=DAILY",
            "UID:rota\r\nRECURRENCE-ID:20261203T000000Z\r\nSUMMARY:alice\r\n"
            "DTSTART:20261203T000000Z\r\nDTEND:20261204T000000Z\r\nSTATUS:CANCELLED",
            "UID:base\r\nSUMMARY:bob\r\nDTSTART:20261101T000000Z\r\nDTEND:20270101T000000Z",
            "UID:cover\r\nSUMMARY:carol\r\nDTSTART:20261205T000000Z\r\n"
            "DTEND:20261206T000000Z\r\nSTATUS:CANCELLED",
        )
    )
    assert await schedule.on_call_at(at("2026-12-02T12:00:00")) == "alice"
    assert await schedule.on_call_at(at("2026-12-03T12:00:00")) == "bob"
    assert await schedule.on_call_at(at("2026-12-05T12:00:00")) == "alice"


async def test_a_schedule_is_read_and_worked_out_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schedule read again after it changed is parsed, and its shifts prepared, on a
    worker thread (a large one takes seconds); its shifts are prepared once per read."""
    import icalendar
    import recurring_ical_events  # type: ignore[import-untyped]

    path = calendar(tmp_path, ALICE_ALL_DECEMBER)
    schedule = ICalOnCall(path)
    work: list[tuple[str, int]] = []
    parse, prepare = icalendar.Calendar.from_ical, recurring_ical_events.of

    def parsing(*args: Any, **kwargs: Any) -> Any:
        work.append(("parse", threading.get_ident()))
        return parse(*args, **kwargs)

    def preparing(*args: Any, **kwargs: Any) -> Any:
        work.append(("prepare", threading.get_ident()))
        return prepare(*args, **kwargs)

    monkeypatch.setattr(icalendar.Calendar, "from_ical", parsing)
    monkeypatch.setattr(recurring_ical_events, "of", preparing)
    december = at("2026-12-05T12:00:00")
    assert await schedule.on_call_at(december) == "alice"
    path.write_text(path.read_text().replace("SUMMARY:alice", "SUMMARY:bob"))
    stamp = path.stat().st_mtime + 1
    os.utime(path, (stamp, stamp))
    assert await schedule.on_call_at(december) == "bob"
    assert await schedule.on_call_at(december) == "bob"
    assert [what for what, _ in work] == ["prepare", "parse", "prepare"]
    assert threading.get_ident() not in {thread for _, thread in work}


FILLER = b"X-FILLER:" + b"x" * (4 * 1024 * 1024) + b"\r\n"
"""A line that takes a schedule over the default cap (4 MiB)."""


def test_a_schedule_file_over_the_cap_is_refused_naming_it(tmp_path: Path) -> None:
    big = calendar(tmp_path, ALICE_ALL_DECEMBER)
    with big.open("ab") as file:
        file.write(FILLER)
    with pytest.raises(ValueError, match=r"payments\.ics' holds more than 4194304 bytes"):
        ICalOnCall(big)
    with pytest.raises(ValueError, match=r"is not an iCal calendar"):
        ICalOnCall(big, max_bytes=len(FILLER) * 2)  # a larger cap reads it all


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_device_or_a_fifo_is_refused_without_reading_it(tmp_path: Path) -> None:
    """A FIFO with no writer never opens and ``/dev/zero`` never ends: neither is read."""
    fifo = tmp_path / "shifts.ics"
    os.mkfifo(fifo)
    for source in (fifo, Path("/dev/zero")):
        with pytest.raises(ValueError, match=r"is not a regular file"):
            ICalOnCall(source)


def test_a_folder_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is not a regular file: give the path"):
        ICalOnCall(tmp_path)


async def test_a_file_grown_over_the_cap_leaves_the_schedule_read_before(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = calendar(tmp_path, ALICE_ALL_DECEMBER)
    schedule = ICalOnCall(path)
    assert await schedule.on_call_at(at("2026-12-05T12:00:00+00:00")) == "alice"
    path.write_bytes(path.read_bytes() + FILLER)
    os.utime(path, (1, 1))
    assert await schedule.on_call_at(at("2026-12-05T12:00:00+00:00")) == "alice"
    assert "holds more than 4194304 bytes" in caplog.text


async def test_a_feed_sending_more_than_the_cap_is_refused_naming_it() -> None:
    """A feed sending too much is cut at the cap, whether or not it says its length."""
    body = SCHEDULE.read_bytes()

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/calendar"})
        await response.prepare(request)
        for _ in range(128):  # 8 MiB, chunked: no length said
            await response.write(b"X" * 65536)
        await response.write_eof()
        return response

    async def declared(request: web.Request) -> web.Response:
        return web.Response(body=body + FILLER, content_type="text/calendar")

    async with serving("/endless.ics", endless) as base:
        schedule = ICalOnCall(f"{base}/endless.ics")
        with pytest.raises(ValueError, match=r"the feed 'http://127\.0\.0\.1:\d+/endless\.ics'"):
            await schedule.on_call_at(at("2027-03-27T12:00:00+00:00"))
    async with serving("/declared.ics", declared) as base:
        schedule = ICalOnCall(f"{base}/declared.ics")
        with pytest.raises(ValueError, match=r"holds more than 4194304 bytes"):
            await schedule.on_call_at(at("2027-03-27T12:00:00+00:00"))


async def test_a_request_made_while_nobody_is_on_call_goes_to_the_next_shift(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Made in a gap of the schedule, a request is told to no one: a warning says so, and
    whoever comes on call is told of it, as the next person of a shift change is."""
    clock = FakeClock(at("2027-03-24T12:00:00"))
    handler = HumanInputHandler(
        directory=Directory(PEOPLE, on_call={"payments": ICalOnCall(SCHEDULE)})
    )
    router = handler.router
    assert router is not None
    router.clock = clock
    with caplog.at_level("WARNING", logger="roomkit.routing"):
        request = await handler.create_approval(
            "pay", {"amount": 5}, approvers=[on_call("payments")]
        )
    assert await router.recipients(request) == ()
    assert any("'payments' names nobody now" in r.message for r in caplog.records)
    clock.now = at("2027-03-27T12:00:00")
    assert await router.recipients(request) == ("alice",)
    items = await handler.outbox.items_for(request.pending_id)
    assert [item.body for item in items if item.body.get("job") == "reassign"] == [
        {"job": "reassign", "to": "alice"}
    ]


class _Silent:
    """An on-call source of one's own that never answers."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def on_call_at(self, at: datetime) -> str | None:
        self.asked.set()
        await asyncio.Event().wait()
        return None


async def test_a_schedule_that_never_answers_holds_no_routing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The lookup is bounded: past it, the routing goes on with whoever was assigned (no
    one yet), saying so, and the other schedules route as before."""
    from roomkit.routing import _members

    monkeypatch.setattr(_members, "LOOKUP", 0.05)
    silent = _Silent()
    handler = HumanInputHandler(
        directory=Directory(PEOPLE, on_call={"silent": silent, "payments": ICalOnCall(SCHEDULE)})
    )
    router = handler.router
    assert router is not None
    router.clock = FakeClock(at("2027-03-27T12:00:00"))
    stuck = await handler.create_approval("pay", {"n": 1}, approvers=[on_call("silent")])
    other = await handler.create_approval("pay", {"n": 2}, approvers=[on_call("payments")])
    async with asyncio.timeout(30):
        assert await router.recipients(stuck) == ()
        assert await router.recipients(other) == ("alice",)
    assert silent.asked.is_set()
    assert "on-call schedule 'silent' (it did not answer within 0.05 s)" in caplog.text

"""Routing on every store: a delegate's vote read back by another process, a shift
change told to the new person through the notifier's outbox, and a request made in a gap
between shifts told to whoever comes on call next."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from escalating import Recorder, escalation, step
from routing_clock import FakeClock
from tests.servers.stores import Ahead, StoreSite

from roomkit.notify import Notifier
from roomkit.people import Delegation, Directory, Person, Role, on_call, role
from roomkit.routing import ICalOnCall
from roomkit.testing import advance, run_virtual
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

SCHEDULE = Path(__file__).parent / "fixtures" / "payments.ics"
STARTS = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
ENDS = datetime(2026, 12, 12, 9, 0, tzinfo=UTC)


@pytest.fixture
async def stores(store_site: StoreSite) -> AsyncIterator[list[Any]]:
    opened: list[Any] = []
    yield opened
    for store in opened:
        await store.close()


def handler_on(
    site: StoreSite, stores: list[Any], directory: Directory, clock: FakeClock
) -> HumanInputHandler:
    store = site.open()
    if store is not None:
        stores.append(store)
    handler = HumanInputHandler(store=store, directory=directory)
    assert handler.router is not None
    handler.router.clock = clock
    return handler


async def test_a_delegates_vote_counts_once_and_reads_back(
    store_site: StoreSite, stores: list[Any]
) -> None:
    directory = Directory(
        {
            name: Person(delegations=[Delegation(to="carol", starts=STARTS, ends=ENDS)])
            for name in ("alice", "bob")
        }
    )
    clock = FakeClock(STARTS)
    handler = handler_on(store_site, stores, directory, clock)
    request = await handler.create_approval(
        "pay", {"amount": 5}, approvers=["alice", "bob", "dave"], quorum=2
    )
    assert await handler.aresolve(request.pending_id, approve(), by="carol")
    assert not await handler.aresolve(request.pending_id, approve(), by="carol")
    other = handler_on(store_site, stores, directory, clock) if store_site.durable else handler
    read = await other.get_request(request.pending_id)
    assert read is not None
    assert [(v.actor, v.on_behalf_of) for v in read.votes] == [("carol", "alice")]
    assert read.approvers == ("bob", "dave")
    voted = [e for e in await other.history(request.pending_id) if e["type"] == "voted"]
    assert voted[0]["on_behalf_of"] == "alice"


async def test_a_shift_change_is_told_to_the_new_person(
    store_site: StoreSite, stores: list[Any]
) -> None:
    people = {name: Person(email=f"{name}@example.com") for name in ("alice", "bob")}
    directory = Directory(people, on_call={"payments": ICalOnCall(SCHEDULE)})
    clock = FakeClock(datetime(2027, 3, 27, 12, tzinfo=UTC))
    handler = handler_on(store_site, stores, directory, clock)
    surface = Recorder()
    async with Notifier(handler, [surface]) as notifier:
        request = await handler.create_approval(
            "pay", {"amount": 5}, approvers=[on_call("payments")]
        )
        await notifier.wait_idle()
        clock.now = datetime(2027, 3, 28, 12, tzinfo=UTC)
        assert await handler.router.may_decide(request, "bob")  # type: ignore[union-attr]
        await notifier.wait_idle()
    told = [(notice.type, notice.recipient) for notice in surface.told]
    assert told == [("question_pending", "alice"), ("question_escalated", "bob")]


async def test_each_ladder_step_is_routed_as_the_delegation_then_stands(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """Asked before Alice leaves: she is told; a reminder while she is away goes to Carol;
    one after she is back goes to her again."""
    directory = Directory(
        {"alice": Person(delegations=[Delegation(to="carol", starts=STARTS, ends=ENDS)])}
    )
    clock = FakeClock(datetime(2026, 12, 1, 9, tzinfo=UTC))
    handler = handler_on(store_site, stores, directory, clock)
    surface = Recorder()
    async with Notifier(handler, [surface]) as notifier:
        request = await handler.create_approval("pay", {"amount": 5}, approvers=["alice"])
        await notifier.wait_idle()
        clock.now = STARTS
        await handler.outbox.add([step(handler, request.pending_id, "remind", 0)])
        await notifier.wait_idle()
        clock.now = ENDS
        await handler.outbox.add([step(handler, request.pending_id, "remind", 1)])
        await notifier.wait_idle()
    assert [(n.type, n.recipient) for n in surface.told] == [
        ("question_pending", "alice"),
        ("question_reminder", "carol"),
        ("question_reminder", "alice"),
    ]


async def test_a_rotation_goes_on_across_processes(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """Each process on the store assigns the member the others assigned least recently:
    a restarted or second process does not start again from the first member."""
    directory = Directory(roles={"kyc": Role(members=["dan", "erin", "frank"], rule="rotation")})
    clock = FakeClock(STARTS)
    first = handler_on(store_site, stores, directory, clock)
    second = handler_on(store_site, stores, directory, clock) if store_site.durable else first
    assigned = []
    for handler in (first, second, first, second):
        request = await handler.create_approval("kyc_check", {"id": 1}, approvers=[role("kyc")])
        assert handler.router is not None
        assigned.append(await handler.router.recipients(request))
    assert assigned == [("dan",), ("erin",), ("frank",), ("dan",)]


class GatedSchedule:
    """An on-call schedule naming alice, that answers once the test lets it."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.go = asyncio.Event()

    async def on_call_at(self, at: datetime) -> str | None:
        self.asked.set()
        await self.go.wait()
        return "alice"


async def test_a_request_is_stored_with_its_first_assignment(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """While the asking process reads the schedule, no process sees the request; once it
    is made, every process reads who it is assigned to, and none assigns it again."""
    schedule = GatedSchedule()
    clock = FakeClock(STARTS)
    asking = handler_on(store_site, stores, Directory(on_call={"payments": schedule}), clock)
    other_directory = Directory(on_call={"payments": ICalOnCall(SCHEDULE)})
    other = handler_on(store_site, stores, other_directory, clock) if store_site.durable else asking
    made = asyncio.create_task(
        asking.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    )
    await schedule.asked.wait()
    assert await other.list_pending() == []
    schedule.go.set()
    request = await made
    assert other.router is not None
    assert await other.router.recipients(request) == ("alice",)
    routed = [e for e in await other.history(request.pending_id) if e["surface"] == "routing"]
    assert [(e["approvers"], e["reason"]) for e in routed] == [(["alice"], "on call")]


async def test_a_member_who_left_a_rotation_role_hands_its_requests_on(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """Dan is assigned, then leaves the role (the directory changed, the process
    restarted): he decides no more, Erin does, and she is told, once: the request's
    announcement, worked out after she was assigned it, tells her."""
    clock = FakeClock(STARTS)
    before = Directory(roles={"kyc": Role(members=["dan", "erin"], rule="rotation")})
    asking = handler_on(store_site, stores, before, clock)
    request = await asking.create_approval(
        "kyc_check", {"id": 1}, approvers=["alice", role("kyc")], quorum=2
    )
    assert asking.router is not None
    assert await asking.router.recipients(request) == ("alice", "dan")
    after = Directory(roles={"kyc": Role(members=["erin"], rule="rotation")})
    if store_site.durable:
        restarted = handler_on(store_site, stores, after, clock)
    else:
        restarted, asking.router.directory = asking, after
    assert restarted.router is not None
    surface = Recorder()
    async with Notifier(restarted, [surface]) as notifier:
        assert not await restarted.router.may_decide(request, "dan")
        assert await restarted.router.recipients(request) == ("alice", "erin")
        await notifier.wait_idle()
    assert [n.type for n in surface.told if n.recipient == "erin"] == ["question_pending"]
    assert not await restarted.aresolve(request.pending_id, approve(), by="dan")
    assert await restarted.aresolve(request.pending_id, approve(), by="erin")
    routed = [e for e in await restarted.history(request.pending_id) if e["surface"] == "routing"]
    assert [(e["approvers"], e["reason"]) for e in routed] == [
        (["dan"], "rotation"),
        (["erin"], "member left"),
    ]


async def test_an_escalation_to_whoever_is_on_call_tells_them_once(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """Escalated to a schedule, its person is told by the escalation, once: being assigned
    the request as the first person on call tells them nothing more."""
    people = {name: Person(email=f"{name}@example.com") for name in ("alice", "dave")}
    directory = Directory(people, on_call={"payments": ICalOnCall(SCHEDULE)})
    clock = FakeClock(datetime(2027, 3, 27, 12, tzinfo=UTC))
    handler = handler_on(store_site, stores, directory, clock)
    surface = Recorder()
    async with Notifier(handler, [surface]) as notifier:
        request = await handler.create_approval("pay", {"amount": 5}, approvers=["dave"])
        await notifier.wait_idle()
        await handler.outbox.add([escalation(handler, request.pending_id, on_call("payments"))])
        await notifier.wait_idle()
    told = [(notice.type, notice.recipient) for notice in surface.told]
    assert [kind for kind, recipient in told if recipient == "alice"] == ["question_escalated"]
    assert told[0] == ("question_pending", "dave")
    routed = [e for e in await handler.history(request.pending_id) if e["surface"] == "routing"]
    assert [(e["approvers"], e["reason"]) for e in routed] == [(["alice"], "on call")]


DAY_SHIFTS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\n"
    "UID:days\r\nSUMMARY:alice\r\nDTSTART:20270301T090000Z\r\nDTEND:20270301T170000Z\r\n"
    "RRULE:FREQ=DAILY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
"""Alice on call from 09:00 to 17:00 UTC every day, and nobody at night."""


async def made_in_a_gap(
    schedule: Path, later: Callable[[float], Awaitable[None]], opened: list[Any], site: StoreSite
) -> tuple[list[tuple[str, str, str | None]], dict[str, list[tuple[list[str], str]]]]:
    """One request made in a shift, one at 03:00 (nobody on call) with no ladder, each
    announced by a notifier that then stops; the clocks move past 09:00, and a notifier of
    another process (a restart, on the memory store) runs. What was told, and each
    request's routing entries."""
    directory = Directory(
        {"alice": Person(email="alice@example.com")}, on_call={"payments": ICalOnCall(schedule)}
    )
    clock = FakeClock(datetime(2027, 3, 10, 12, tzinfo=UTC))
    asking = HumanInputHandler(store=opened[0] if opened else None, directory=directory)
    assert asking.router is not None
    asking.router.clock = clock
    surface = Recorder()
    async with Notifier(asking, [surface]) as notifier:
        shift = await asking.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
        await notifier.wait_idle()
        clock.now = datetime(2027, 3, 11, 3, tzinfo=UTC)
        gap = await asking.create_approval("pay", {"amount": 6}, approvers=[on_call("payments")])
        await notifier.wait_idle()
    await later(6.5 * 3600)  # 09:30: alice's shift began half an hour ago
    clock.now = datetime(2027, 3, 11, 9, 30, tzinfo=UTC)
    other = asking
    if opened:
        opened.append(site.open(clock=opened[0].clock))
        other = HumanInputHandler(store=opened[-1], directory=directory)
    assert other.router is not None
    other.router.clock = clock
    async with Notifier(other, [surface]) as notifier:
        await notifier.wait_idle()
        await later(300)  # the looks that come after find nothing more to tell
        clock.now = datetime(2027, 3, 11, 9, 35, tzinfo=UTC)
        await notifier.wait_idle()
    names = {shift.pending_id: "shift", gap.pending_id: "gap"}
    told = [(names[n.request.pending_id], n.type, n.recipient) for n in surface.told]
    routed = {
        name: [
            (e["approvers"], e["reason"])
            for e in await other.history(pending_id)
            if e["surface"] == "routing"
        ]
        for pending_id, name in names.items()
    }
    return told, routed


async def gap_on_durable_store(site: StoreSite, schedule: Path) -> Any:
    clock = Ahead()
    opened = [site.open(clock=clock)]  # type: ignore[arg-type]
    try:
        return await made_in_a_gap(schedule, clock.move, opened, site)
    finally:
        for store in opened:
            await store.close()


def test_a_request_made_in_a_gap_is_told_to_the_next_shift_once(
    store_site: StoreSite, tmp_path: Path
) -> None:
    """Made at 03:00 while the schedule names nobody, with no ladder and no one at the desk:
    once alice's shift begins, a notifier (of another process, after a restart) assigns her
    the request and tells her of it, once; a request made during a shift is left as it was.

    The memory store's clock is the event loop's, so it runs on the virtual clock; a
    durable store's is injected, on the real loop.
    """
    schedule = tmp_path / "days.ics"
    schedule.write_text(DAY_SHIFTS)
    if store_site.durable:
        told, routed = asyncio.run(gap_on_durable_store(store_site, schedule))
    else:
        told, routed = run_virtual(made_in_a_gap(schedule, advance, [], store_site))
    assert told == [
        ("shift", "question_pending", "alice"),
        ("gap", "question_escalated", "alice"),
    ]
    assert routed == {"shift": [(["alice"], "on call")], "gap": [(["alice"], "on call")]}

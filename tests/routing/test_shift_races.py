"""A shift change seen by two handlers of one store at once, and by one racing the request's
settle: one assignment per shift change per request, and none after the settle."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from routing_clock import FakeClock
from tests.servers.stores import StoreSite

from roomkit.models.history import Shown
from roomkit.people import Directory, Person, on_call
from roomkit.stores import MemoryStore, broken_link
from roomkit.stores.outbox import OutboxItem
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler

PEOPLE = {name: Person(email=f"{name}@example.com") for name in ("alice", "bob")}
NIGHT = datetime(2027, 3, 27, 20, tzinfo=UTC)
MORNING = datetime(2027, 3, 28, 8, tzinfo=UTC)


class HeldSchedule:
    """An on-call schedule: Alice by night, Bob from the morning. Once armed, the next
    ``held`` lookups (each made by a router that has read the history) wait: ``arrived`` is
    set when all of them are waiting, and they go on together when the test sets
    ``release``. Lookups after them (a router reading the history again) go straight on."""

    def __init__(self) -> None:
        self.held = 0
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    def arm(self, held: int) -> None:
        self.held = held

    async def on_call_at(self, at: datetime) -> str | None:
        if self.held:
            self.held -= 1
            if not self.held:
                self.arrived.set()
            await self.release.wait()
        return "alice" if at < MORNING else "bob"


@pytest.fixture
async def stores() -> AsyncIterator[list[Any]]:
    opened: list[Any] = []
    yield opened
    for store in opened:
        await store.close()


def handlers(
    site: StoreSite, stores: list[Any], schedule: HeldSchedule, clock: FakeClock
) -> tuple[HumanInputHandler, HumanInputHandler, HumanInputHandler]:
    """Three handlers on the test's store, each with a connection of its own, as three
    processes have (on memory, three handlers on one memory store): two routing through the
    schedule, and one without a directory, whose settles route nothing."""
    shared = MemoryStore() if not site.durable else None
    made = []
    for routes in (True, True, False):
        store = shared if shared is not None else site.open()
        if shared is None:
            stores.append(store)
        directory = Directory(PEOPLE, on_call={"payments": schedule}) if routes else None
        handler = HumanInputHandler(store=store, directory=directory)
        if routes:
            assert handler.router is not None
            handler.router.clock = clock
        made.append(handler)
    return made[0], made[1], made[2]


def assignments(history: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [
        (entry["approvers"][0], entry.get("reason"))
        for entry in history
        if entry["type"] == "escalated" and entry["surface"] == "routing"
    ]


async def test_two_handlers_seeing_one_shift_change_assign_it_once(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """Both read the history before either writes: one assignment, one notice to Bob."""
    schedule = HeldSchedule()
    clock = FakeClock(NIGHT)
    left, right, _ = handlers(store_site, stores, schedule, clock)
    request = await left.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    clock.now = MORNING
    schedule.arm(2)  # both read the history, then both look up the schedule at once
    seen = [
        asyncio.create_task(handler.router.refresh(request))  # type: ignore[union-attr]
        for handler in (left, right)
    ]
    await schedule.arrived.wait()
    schedule.release.set()
    for refreshed in seen:
        assert (await refreshed) == {on_call("payments"): "bob"}
    history = await left.history(request.pending_id)
    assert assignments(history) == [("alice", "on call"), ("bob", "shift change")]
    outboxes = [left.outbox] if store_site.durable else [left.outbox, right.outbox]
    told = [
        item.body["to"]
        for outbox in outboxes
        for item in await outbox.items_for(request.pending_id)
        if item.body.get("job") == "reassign"
    ]
    assert told == ["bob"]


async def test_a_shift_change_seen_as_the_request_settles_is_not_recorded_after_it(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """The answer lands between the router's read of the history and its assignment."""
    schedule = HeldSchedule()
    clock = FakeClock(NIGHT)
    left, _, settling = handlers(store_site, stores, schedule, clock)
    request = await left.create_approval("pay", {"amount": 5}, approvers=[on_call("payments")])
    clock.now = MORNING
    schedule.arm(1)  # the refresh has read the history when the answer lands
    refreshing = asyncio.create_task(left.router.refresh(request))  # type: ignore[union-attr]
    await schedule.arrived.wait()
    assert await settling.aresolve(request.pending_id, approve(), by="alice")
    schedule.release.set()
    await refreshing
    history = await left.history(request.pending_id)
    assert history[-1]["type"] == "settled"
    assert assignments(history) == [("alice", "on call")]


async def test_record_at_appends_only_at_the_length_read_and_while_open(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """Another process's entry in between, or the settle, leaves the history as it was."""
    left, right, _ = handlers(store_site, stores, HeldSchedule(), FakeClock(NIGHT))
    request = await left.create_approval("pay", {"amount": 5}, approvers=["alice"])
    pending_id = request.pending_id
    read = len(await left.history(pending_id))
    await left.record(pending_id, Shown(actor="alice", surface="desk"))
    assert not await right.record_at(pending_id, Shown(actor="bob", surface="desk"), seq=read)
    assert await right.record_at(pending_id, Shown(actor="bob", surface="desk"), seq=read + 1)
    assert await left.record_at(pending_id, Shown(actor="carol", surface="desk"), seq=read + 2)
    assert await left.aresolve(pending_id, approve(), by="alice")
    settled = len(await left.history(pending_id))
    assert not await right.record_at(pending_id, Shown(actor="dan", surface="desk"), seq=settled)
    history = await right.history(pending_id)
    assert [(e["type"], e["actor"]) for e in history[read:]] == [
        ("shown", "alice"),
        ("shown", "bob"),
        ("shown", "carol"),
        ("decided", "alice"),
        ("settled", "alice"),
    ]
    if store_site.durable:
        chains = await stores[0].history_texts()
        assert broken_link(pending_id, chains[pending_id]) is None


async def test_record_at_adds_its_notices_only_with_its_entry(
    store_site: StoreSite, stores: list[Any]
) -> None:
    """A refused entry adds none of its notices; one recorded adds them, once."""
    left, right, _ = handlers(store_site, stores, HeldSchedule(), FakeClock(NIGHT))
    request = await left.create_approval("pay", {"amount": 5}, approvers=["alice"])
    pending_id = request.pending_id
    read = len(await left.history(pending_id))
    notice = OutboxItem(f"{pending_id}.reassign.0.bob", pending_id, 0.0, {"job": "reassign"})
    shown = Shown(actor="bob", surface="desk")
    assert not await right.record_at(pending_id, shown, seq=read + 1, notices=[notice])
    assert await right.outbox.items_for(pending_id) == []
    assert await right.record_at(pending_id, shown, seq=read, notices=[notice])
    assert not await left.record_at(pending_id, shown, seq=read, notices=[notice])
    assert [item.item_id for item in await right.outbox.items_for(pending_id)] == [notice.item_id]
    with pytest.raises(TypeError, match="sequence of OutboxItem"):
        await left.record_at(pending_id, shown, seq=read + 1, notices=notice)  # type: ignore[arg-type]
    assert len(await left.history(pending_id)) == read + 1

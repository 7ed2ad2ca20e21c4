"""A request settled as it is made, inserted in one write, on every durable store: kept,
listed, replayed by its key, heard of and purged as a request settled after its insert is."""

from __future__ import annotations

import time

import pytest
from tests.tools.human_input.stores.store_kit import Backend, Changes, FakeClock, Store
from tests.tools.human_input.stores.store_kit import make_request as made

from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import PendingChange, PendingChangeKind, check_trail, new_entry, settled_entry
from roomkit.stores.base import InsertsSettled

PENDING, RESOLVED = PendingInputStatus.PENDING, PendingInputStatus.RESOLVED
REJECTED, TIMED_OUT = PendingInputStatus.REJECTED, PendingInputStatus.TIMED_OUT
CREATED, SETTLED = PendingChangeKind.CREATED, PendingChangeKind.SETTLED


def settled(**overrides: object) -> PendingInput:
    """A request approved by a policy as it is made."""
    values: dict[str, object] = {
        "status": RESOLVED,
        "result": '{"decision":"approve"}',
        "settled_by": "policy:p",
        "kind": "approval",
    }
    values.update(overrides)
    return made(**values)


HISTORY = (
    new_entry("created", surface="policy", tool="AskUserQuestion"),
    new_entry("decided", actor="policy:p", surface="policy", decision="approve"),
    settled_entry("resolved", actor="policy:p", surface="policy"),
)


async def test_every_durable_store_inserts_a_request_settled(store: Store) -> None:
    assert isinstance(store, InsertsSettled)


async def test_a_request_inserted_settled_reads_as_settled_and_owes_nothing(
    store: Store,
) -> None:
    record, created = await store.insert_settled(settled(), history=HISTORY)

    assert created
    assert (record.status, record.result, record.settled_by) == (
        RESOLVED,
        '{"decision":"approve"}',
        "policy:p",
    )
    fetched = await store.fetch(record.pending_id)
    assert fetched is not None
    assert (fetched.status, fetched.result, fetched.settled_by) == (
        RESOLVED,
        '{"decision":"approve"}',
        "policy:p",
    )
    assert await store.list_pending() == []
    assert [listed.pending_id for listed in await store.list_settled()] == [record.pending_id]
    assert await store.was_announced(record.pending_id)
    history = await store.read_history(record.pending_id)
    assert [(entry["type"], entry["at"]) for entry in history] == [
        (entry["type"], entry["at"]) for entry in HISTORY
    ]
    assert [entry["seq"] for entry in history] == [0, 1, 2]
    report = check_trail(await store.trail.read(), None, now=time.time())
    assert report.problems == []
    # Settled already: no settle takes it.
    assert await store.settle(record.pending_id, REJECTED, reason="late") is None


async def test_a_rejection_is_inserted_with_its_reason(store: Store) -> None:
    request = settled(status=REJECTED, result=None, reject_reason="over the limit")
    record, _ = await store.insert_settled(request, history=HISTORY[:1])

    assert (record.status, record.reject_reason) == (REJECTED, "over the limit")


async def test_a_key_replays_a_request_inserted_settled(store: Store) -> None:
    first, _ = await store.insert_settled(settled(key="call-1"), history=HISTORY)

    again, created = await store.insert(made(key="call-1"))
    replayed, created_settled = await store.insert_settled(settled(key="call-1"), history=HISTORY)

    assert not created
    assert not created_settled
    assert again.pending_id == replayed.pending_id == first.pending_id
    assert again.status is RESOLVED


async def test_a_key_holder_open_is_handed_back_untouched(store: Store) -> None:
    open_one, _ = await store.insert(made(key="call-2"))

    found, created = await store.insert_settled(settled(key="call-2"), history=HISTORY)

    assert not created
    assert (found.pending_id, found.status) == (open_one.pending_id, PENDING)
    assert await store.read_history(open_one.pending_id) == []


async def test_only_a_resolved_or_rejected_request_is_inserted_settled(store: Store) -> None:
    for status in (PENDING, TIMED_OUT):
        with pytest.raises(ValueError, match="resolved or rejected"):
            await store.insert_settled(made(status=status), history=HISTORY)
    assert await store.list_pending() == []


async def test_listeners_hear_of_the_creation_then_of_the_settle(
    store: Store, backend: Backend
) -> None:
    changes = Changes()
    unsubscribe = store.subscribe(changes)

    record, _ = await store.insert_settled(settled(), history=HISTORY)

    # Told before the call returns (a feed may repeat what this store wrote, as it hears it).
    mine = [change for change in changes.seen if change.pending_id == record.pending_id]
    kinds = [change.kind for change in mine]
    assert kinds.index(CREATED) < kinds.index(SETTLED)
    carried = [change.record for change in mine if change.record is not None]
    assert carried
    assert carried[0].status is RESOLVED
    unsubscribe()


async def test_a_listener_on_another_store_hears_of_the_settle(backend: Backend) -> None:
    async with backend.make() as a, backend.make() as b:
        changes = Changes()
        unsubscribe = b.subscribe(changes)
        await backend.live(changes)

        record, _ = await a.insert_settled(settled(), history=HISTORY)

        await changes.arrival(PendingChange(SETTLED, record.pending_id))
        unsubscribe()


async def test_a_request_inserted_settled_is_purged_past_the_retention(
    store: Store, clock: FakeClock, backend: Backend
) -> None:
    record, _ = await store.insert_settled(settled(key="call-3"), history=HISTORY)

    clock.advance(3601)

    assert await store.fetch(record.pending_id) is None
    await store.purge_expired()
    assert record.pending_id not in await backend.stored_ids()
    again, created = await store.insert(made(key="call-3"))
    assert created
    assert again.pending_id != record.pending_id

"""The memory store on the points where every store agrees with the durable ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from tests.tools.human_input.stores.store_kit import RESOLVED, ids, make_request

from roomkit.models.pending_input import PendingInput
from roomkit.stores import MemoryStore
from roomkit.tools.human_input import HumanInputHandler


def test_active_requests_follow_creation_time_not_insertion() -> None:
    """As on SQLite and Redis: by ``created_at``, ties by id, whatever the time zone."""
    store = MemoryStore()
    late = make_request(created_at=datetime(2024, 3, 1, tzinfo=UTC))
    midnight = make_request(created_at=datetime(2024, 1, 1, tzinfo=UTC))
    eve = make_request(created_at=datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=2))))
    tie_b = make_request(pending_id="tie-b", created_at=datetime(2024, 2, 1, tzinfo=UTC))
    tie_a = make_request(pending_id="tie-a", created_at=datetime(2024, 2, 1, tzinfo=UTC))
    for request in (late, midnight, eve, tie_b, tie_a):
        store.add(request)

    assert ids(store.active()) == ids([eve, midnight, tie_a, tie_b, late])


def test_no_retention_hands_the_outcome_to_the_settle_and_replays_nothing() -> None:
    store = MemoryStore(retention=0)
    request = make_request()
    store.add(request)

    won = store.settle(request.pending_id, RESOLVED, result="yes")
    store.retire(request)

    assert won is not None
    assert won.result == "yes"
    assert store.get_settled(request.pending_id) is None


async def test_a_subclass_reads_its_own_way_and_reaches_the_stores_reads() -> None:
    """A subclass's get() is the one the handler calls; super().get() reads the store."""

    class Counting(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.reads: list[str] = []

        def get(self, pending_id: str) -> PendingInput | None:
            self.reads.append(pending_id)
            return super().get(pending_id)

    store = Counting()
    handler = HumanInputHandler(store=store)
    request = await handler.create("ask", {"q": "?"})
    assert handler.resolve(request.pending_id, "yes")
    assert await handler.wait(request.pending_id) == "yes"
    assert request.pending_id in store.reads
    assert store.get_settled(request.pending_id) is request

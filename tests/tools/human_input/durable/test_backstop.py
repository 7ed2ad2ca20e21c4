"""The backstop of waits on a durable store: it reads what changed, and only that.

While nothing changes, parked waits read no request record, however many there are: each
backstop interval asks the store's change log, and finds nothing. An answer whose hint never
reached the waiting process (its change feed stopped without a word) is still found by the
next look, which reads that one request alone; so is an earlier deadline, which no hint
announces. The handler's statistics count the looks and the records read.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from tests.tools.human_input.durable.cross_process_peer import parked
from tests.tools.human_input.durable.store_fixtures import Opener
from tests.tools.human_input.stores.store_kit import PATIENCE

from roomkit.core.exceptions import HumanInputTimeoutError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

durable = pytest.mark.parametrize("store_kind", ["sqlite", "redis", "postgres"])

QUESTION = {"question": "Anyone there?"}
WAITS = 40


async def looked(handler: HumanInputHandler, count: int) -> None:
    """Return once the handler's backstop has looked ``count`` times in all."""
    # As ``parked`` does: one trip to a worker thread between two reads of the statistics.
    while handler.statistics().backstop_looks < count:
        await asyncio.to_thread(_nothing)


def _nothing() -> None:
    """What :func:`looked` runs on a worker thread between two looks."""


async def deafen(store: Any) -> None:
    """Stop the store's change feed for good, as one whose connection went quiet without a
    word would be: no hint reaches this process, and no resync either."""
    feed = store._feed
    feed._listeners.clear()
    await feed.stop()


async def park(handler: HumanInputHandler, count: int, timeout: float | None) -> list[Any]:
    """Create ``count`` requests and park a wait on each; the requests and their waits."""
    requests = [await handler.create("AskUserQuestion", QUESTION) for _ in range(count)]
    waits = [
        asyncio.create_task(handler.wait(request.pending_id, timeout=timeout))
        for request in requests
    ]
    async with asyncio.timeout(PATIENCE):
        await parked(handler, count)
    return list(zip(requests, waits, strict=True))


async def settled_looks(handler: HumanInputHandler) -> int:
    """Two looks after the waits parked: whatever they changed (the creates, the deadlines)
    has been named and read; the count of looks so far."""
    count = handler.statistics().backstop_looks + 2
    async with asyncio.timeout(PATIENCE):
        await looked(handler, count)
    return count


@durable
async def test_idle_waits_read_no_record(open_another: Opener) -> None:
    handler = HumanInputHandler(store=open_another())
    parked_waits = await park(handler, WAITS, timeout=3600)
    looks = await settled_looks(handler)
    before = handler.statistics()

    async with asyncio.timeout(PATIENCE):
        await looked(handler, looks + 4)

    figures = handler.statistics()
    # Nothing changed, so nothing was read, but for a resync the store asked for (its feed
    # reconnected on a busy server), which reads every wait once.
    rereads = figures.rereads - before.rereads
    assert figures.records_read - before.records_read == WAITS * rereads
    assert rereads <= 1
    assert figures.parked_waits == WAITS
    assert not any(wait.done() for _, wait in parked_waits)
    await handler.close()


@durable
async def test_an_answer_whose_hint_was_lost_is_found_by_the_backstop(
    open_another: Opener,
) -> None:
    waiting_store = open_another()
    handler = HumanInputHandler(store=waiting_store)
    parked_waits = await park(handler, WAITS, timeout=None)
    await deafen(waiting_store)
    looks = await settled_looks(handler)
    before = handler.statistics().records_read
    (request, wait), *others = parked_waits

    assert await HumanInputHandler(store=open_another()).aresolve(request.pending_id, "yes")

    async with asyncio.timeout(PATIENCE):
        assert await wait == "yes"
    figures = handler.statistics()
    assert figures.backstop_looks > looks
    # The look named the one request answered: the other waits were not read.
    assert figures.records_read == before + 1
    assert not any(other.done() for _, other in others)
    await handler.close()


@durable
async def test_an_earlier_deadline_set_elsewhere_times_the_wait_out(
    open_another: Opener,
) -> None:
    """No hint announces a deadline: the backstop finds it, and the wait's timer keeps it."""
    handler = HumanInputHandler(store=open_another())
    ((request, wait),) = await park(handler, 1, timeout=None)
    elsewhere = open_another()

    await elsewhere.set_deadline(request.pending_id, elsewhere.clock() + 0.1)

    async with asyncio.timeout(PATIENCE):
        with pytest.raises(HumanInputTimeoutError):
            await wait
    record = await handler.get_request(request.pending_id)
    assert record is not None
    assert record.status is PendingInputStatus.TIMED_OUT
    await handler.close()


@pytest.mark.parametrize("store_kind", ["postgres"])
async def test_an_answer_committed_after_a_later_one_still_wakes_its_wait(
    open_another: Opener, store_url: str
) -> None:
    """The answer that took its transaction id first commits last, after the backstop found
    the other: the next look still names it."""
    waiting_store = open_another()
    handler = HumanInputHandler(store=waiting_store)
    (first, first_wait), (second, second_wait) = await park(handler, 2, timeout=None)
    await deafen(waiting_store)
    answering = open_another()

    async with await psycopg.AsyncConnection.connect(store_url) as db, db.transaction():
        won = await answering.settle_in(
            db, first.pending_id, PendingInputStatus.RESOLVED, result="slow"
        )
        assert won is not None
        assert await HumanInputHandler(store=answering).aresolve(second.pending_id, "fast")
        async with asyncio.timeout(PATIENCE):
            assert await second_wait == "fast"
        assert not first_wait.done()

    async with asyncio.timeout(PATIENCE):
        assert await first_wait == "slow"
    await handler.close()

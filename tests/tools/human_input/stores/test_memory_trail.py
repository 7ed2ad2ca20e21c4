"""The default handler's histories have an audit trail: heads signed when the trail is read
or checkpointed, and a history that goes with its request (the store's retention) is
forgotten, not deleted."""

from __future__ import annotations

import time

from tests.tools.human_input.stores.trail_places import KEYS

from roomkit import HumanInputHandler
from roomkit.tools.human_input.stores import CarriedTrail, check_trail, new_entry


def anchored(retention: int = 128) -> tuple[HumanInputHandler, CarriedTrail]:
    handler = HumanInputHandler(retention=retention)
    trail = handler.audit_trail
    assert isinstance(trail, CarriedTrail)
    trail.use_keys(KEYS)
    return handler, trail


async def cycle(handler: HumanInputHandler) -> str:
    pending = await handler.create("Ask", {"question": "Colour?"}, room_id="r")
    handler.resolve(pending.pending_id, "blue")
    assert await handler.wait(pending.pending_id) == "blue"
    return pending.pending_id


async def problems(trail: CarriedTrail) -> list[str]:
    return check_trail(await trail.read(), KEYS, now=time.time()).problems


async def test_records_linked_by_a_read_of_the_history_count_as_the_handlers() -> None:
    handler, trail = anchored()
    first = await cycle(handler)
    assert (await trail.checkpoint()).checkpoint is not None
    second = await cycle(handler)
    await handler.record(first, new_entry("executed"))
    # Reading the histories links what the settles recorded, before the trail reads them.
    assert [e["type"] for e in await handler.history(second)] == ["created", "settled"]
    assert len(await handler.history(first)) == 3
    assert await problems(trail) == []
    assert (await trail.checkpoint()).heads == 2
    assert await problems(trail) == []


async def test_histories_forgotten_with_their_requests_are_not_deletions() -> None:
    handler, trail = anchored(retention=2)
    listed = [await cycle(handler) for _ in range(3)]
    assert (await trail.checkpoint()).checkpoint is not None
    for _ in range(5):
        await cycle(handler)
    report = check_trail(await trail.read(), KEYS, now=time.time())
    assert report.problems == []
    assert report.purged == 2  # the two listed requests still retained are not purged
    assert await handler.history(listed[0]) == []


async def test_the_trail_holds_no_more_chains_than_the_store() -> None:
    handler, trail = anchored(retention=3)
    for _ in range(20):
        await cycle(handler)
        await trail.checkpoint()
    assert await problems(trail) == []
    assert len(trail._heads) == len(trail._lengths) == 3
    assert len(trail._taken) <= 3


async def test_settles_leave_the_trail_untouched_until_it_is_read() -> None:
    handler, trail = anchored()
    for _ in range(10):
        await cycle(handler)
    assert trail._heads == trail._lengths == {}
    assert await problems(trail) == []
    assert len(trail._heads) == 10

"""The default handler's histories have an audit trail: heads signed when the trail is read
or checkpointed, and a history that goes with its request (the store's retention) is
forgotten, not deleted."""

from __future__ import annotations

import time

from tests.tools.human_input.stores.trail_places import KEYS

from roomkit import HumanInputHandler
from roomkit.stores import CarriedTrail, check_trail, new_entry


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


async def test_an_appended_entry_is_kept_as_it_was_at_the_append() -> None:
    """A run's ``executed`` (plain values) and an ``escalated`` (a list) are recorded as
    they are when appended: a caller changing its dict afterwards changes nothing, the
    seqs follow one another, and the chain holds."""
    handler, trail = anchored()
    pending_id = await cycle(handler)
    ran = new_entry("executed", digest="a" * 64, ran=True, is_error=False, content="ok")
    widened = new_entry("escalated", approvers=["bob"])
    assert await handler.record(pending_id, ran) == 2
    assert await handler.record(pending_id, widened) == 3
    ran["content"], ran["ran"] = "changed", False
    widened["approvers"].append("mallory")
    history = await handler.history(pending_id)
    assert [entry["type"] for entry in history] == ["created", "settled", "executed", "escalated"]
    assert (history[2]["content"], history[2]["ran"], history[2]["seq"]) == ("ok", True, 2)
    assert history[3]["approvers"] == ["bob"]
    assert await problems(trail) == []

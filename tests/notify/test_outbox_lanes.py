"""The outbox's lanes, on every store: a claim takes what each lane has room for, however
many items of another lane are due before them; and a lane's back-off in the notifier."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import cast

from tests.servers.redis_server import RedisServer

from roomkit.notify._lanes import Lane
from roomkit.notify.retry import Retry
from roomkit.stores.outbox import STEPS, OutboxItem, outbox_for
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler


def delivery(pending_id: str, surface: str, due: float) -> OutboxItem:
    body = {"job": "deliver", "surface": surface, "recipient": None, "type": "question_pending"}
    return OutboxItem(f"{pending_id}.announce.{surface}.-", pending_id, due, body, created=due)


def step(pending_id: str, due: float) -> OutboxItem:
    return OutboxItem(f"{pending_id}.announce", pending_id, due, {"job": "announce"}, created=due)


async def test_a_claim_by_lanes_passes_over_the_lanes_it_does_not_serve(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """Ten deliveries of a lane with no room come first: the other lanes still get theirs,
    and the lanes not named (a surface this notifier lacks) get the rest of the limit."""
    outbox = outbox_for(make_handler())
    now = 1_000.0
    stuck = [delivery(f"s{n}", "stuck", now - 100 + n) for n in range(10)]
    good = [delivery(f"g{n}", "good", now - 50 + n) for n in range(3)]
    steps = [step(f"p{n}", now - 40 + n) for n in range(2)]
    other = [delivery("o1", "gone", now - 30)]
    later = [delivery("g9", "good", now + 60)]
    await outbox.add([*stuck, *good, *steps, *other, *later])

    claimed = await outbox.claim("me", now, 30.0, 5, lanes={"stuck": 0, "good": 2, STEPS: 5})
    ids = sorted(item.item_id for item in claimed)
    assert ids == sorted(
        [good[0].item_id, good[1].item_id, *(s.item_id for s in steps), other[0].item_id]
    )
    assert {item.item_id: item.lane for item in claimed}[other[0].item_id] == "gone"
    # Claimed items are held for the lease; the third good one is still due.
    again = await outbox.claim("me", now, 30.0, 0, lanes={"stuck": 0, "good": 5, STEPS: 5})
    assert [item.item_id for item in again] == [good[2].item_id]

    assert await outbox.next_due(["good"]) == now + 30.0
    assert await outbox.next_due([STEPS]) == now + 30.0
    assert await outbox.next_due(["stuck"]) == now - 100
    assert await outbox.next_due(["nothing here"]) is None
    assert await outbox.next_due() == now - 100

    # Every lane, earliest first, as a claim without lanes takes them (in the order the
    # store hands them over: PostgreSQL's UPDATE returns its rows in none).
    anything = await outbox.claim("me", now, 30.0, 3)
    assert sorted(item.item_id for item in anything) == [s.item_id for s in stuck[:3]]


async def test_a_lanes_renewal_postponement_and_completion_keep_its_claims_right(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    outbox = outbox_for(make_handler())
    now = 1_000.0
    first, second = delivery("a", "hook", now - 2), delivery("b", "hook", now + 1)
    await outbox.add([first, second])
    [taken] = await outbox.claim("me", now, 30.0, 0, lanes={"hook": 9})
    assert taken.item_id == first.item_id
    assert await outbox.renew(first.item_id, "me", now)  # handed back: due at once
    [again] = await outbox.claim("you", now, 30.0, 0, lanes={"hook": 9})
    assert again.item_id == first.item_id
    await outbox.postpone(first.item_id, now + 5)
    [then] = await outbox.claim("you", now + 1, 30.0, 0, lanes={"hook": 9})
    assert then.item_id == second.item_id
    await outbox.complete(second.item_id, {})
    assert await outbox.claim("you", now + 4, 30.0, 0, lanes={"hook": 9}) == []
    [last] = await outbox.claim("you", now + 5, 30.0, 0, lanes={"hook": 9})
    assert (last.item_id, last.attempts) == (first.item_id, 1)


async def test_what_a_failed_attempt_got_through_comes_back_with_the_next_claim(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """A postponement may keep a receipt (a delivery that went through in part): the next
    claims carry it, with lanes or without, until a postponement with another."""
    outbox = outbox_for(make_handler())
    now = 1_000.0
    item = delivery("a", "push", now - 1)
    await outbox.add([item])
    [taken] = await outbox.claim("me", now, 30.0, 0, lanes={"push": 1})
    assert taken.receipt is None
    await outbox.postpone(item.item_id, now + 1, {"endpoints": ["https://push/1"]})
    [again] = await outbox.claim("me", now + 1, 30.0, 0, lanes={"push": 1})
    assert again.receipt == {"endpoints": ["https://push/1"]}
    await outbox.postpone(item.item_id, now + 2)
    [then] = await outbox.claim("me", now + 2, 30.0, 5)
    assert (then.receipt, then.attempts) == ({"endpoints": ["https://push/1"]}, 2)
    await outbox.postpone(
        item.item_id, now + 3, {"endpoints": ["https://push/1", "https://push/2"]}
    )
    [last] = await outbox.claim("me", now + 3, 30.0, 5)
    assert last.receipt == {"endpoints": ["https://push/1", "https://push/2"]}
    await outbox.complete(item.item_id, {"endpoints": ["https://push/2"]})
    [done] = await outbox.items_for("a")
    assert (done.done, done.receipt) == (True, {"endpoints": ["https://push/2"]})


async def test_a_renewal_may_keep_a_receipt_for_the_next_claim(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """Only the holder's renewal keeps a receipt (where a send was going): a renewal without
    one leaves it, the next claim carries it, and completing the item replaces it."""
    outbox = outbox_for(make_handler())
    now = 1_000.0
    item = delivery("a", "push", now - 1)
    await outbox.add([item])
    await outbox.claim("me", now, 30.0, 5)
    sending = {"sending": {"endpoints": ["https://push/1"]}}
    assert not await outbox.renew(item.item_id, "you", now + 5, receipt={"x": 1})
    assert await outbox.renew(item.item_id, "me", now + 5, receipt=sending)
    assert await outbox.renew(item.item_id, "me", now + 10)
    assert await outbox.claim("you", now + 9, 30.0, 5) == []
    [again] = await outbox.claim("you", now + 10, 30.0, 5)
    assert (again.receipt, again.attempts) == (sending, 0)
    await outbox.complete(item.item_id, {"skipped": "not sent"})
    assert not await outbox.renew(item.item_id, "you", now + 20, receipt=sending)
    [done] = await outbox.items_for("a")
    assert (done.done, done.receipt) == (True, {"skipped": "not sent"})


async def test_redis_items_recorded_before_lanes_are_claimed_in_their_lane(
    redis_server: RedisServer, store_prefix: str
) -> None:
    """An item whose hash has no lane (written before lanes were) is given its lane."""
    store = RedisStore(redis_server.url, prefix=store_prefix)
    try:
        outbox = outbox_for(HumanInputHandler(store=store))
        old = delivery("r1", "hook", 10.0)
        key = f"{store_prefix}:outbox:item:{old.item_id}"
        client = store._client
        await client.hset(
            key,
            mapping={
                "pending_id": "r1",
                "body": json.dumps(old.body),
                "attempts": 0,
                "created": 10.0,
                "done": "0",
            },
        )
        await client.zadd(f"{store_prefix}:outbox:due", {old.item_id: 10.0})
        [claimed] = await outbox.claim("me", 20.0, 30.0, 0, lanes={"hook": 1})
        assert (claimed.item_id, claimed.lane) == (old.item_id, "hook")
        await outbox.complete(old.item_id, {})
        assert await outbox.next_due(["hook"]) is None
    finally:
        await store.close()


def test_a_failing_lane_waits_then_tries_one_at_a_time() -> None:
    lane = Lane("hook", 8, Retry(first=10.0, cap=40.0, jitter=0.0))
    assert lane.room(0.0) == 8
    assert lane.failed(started=0.0, now=1.0) == 10.0
    # An attempt under way when the first failed fails with it: it counts once.
    assert lane.failed(started=0.5, now=2.0) == 9.0
    assert lane.room(5.0) == 0
    assert lane.room(11.0) == 1
    # While that one delivery is under way, the lane takes no other.
    trying = cast("asyncio.Task[None]", object())
    lane.inflight.add(trying)
    assert lane.room(11.5) == 0
    lane.inflight.discard(trying)
    assert lane.failed(started=11.0, now=12.0) == 20.0  # the second failure in a row
    assert lane.room(31.0) == 0
    assert lane.room(32.0) == 1
    assert not lane.given_up(created=0.0, now=10.0)
    assert lane.given_up(created=0.0, now=86_400.0)
    lane.delivered()
    assert lane.room(10.0) == 8
    assert not lane.given_up(created=0.0, now=86_400.0)

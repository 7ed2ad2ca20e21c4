"""The memory outbox holds what a count of finished requests holds, however many come and go
(a week of them, before, on a notifier that runs for weeks)."""

from __future__ import annotations

import pytest
from tests.traced_memory import tracing

from roomkit.stores.memory import MemoryOutbox
from roomkit.stores.outbox import Outbox, OutboxItem
from roomkit.tools.human_input import HumanInputHandler, MemoryStore


async def notify(outbox: Outbox, pending_id: str, now: float) -> None:
    """What a notifier does for one request: its announcement and its ending, each a step
    and one webhook delivery, claimed and done."""
    for job in ("announce", "settle"):
        step = f"{pending_id}.{job}"
        await outbox.add([OutboxItem(step, pending_id, now, {"job": job}, created=now)])
        delivery = {"job": "deliver", "surface": "webhook", "recipient": None}
        await outbox.add([OutboxItem(f"{step}.webhook.-", pending_id, now, delivery, created=now)])
        for item in await outbox.claim("me", now, 30.0, 8):
            await outbox.complete(item.item_id, {})


async def requests(outbox: Outbox, first: int, count: int) -> None:
    for number in range(first, first + count):
        await notify(outbox, f"r{number}", float(number))


async def test_finished_requests_leave_nothing_behind() -> None:
    """3,000 requests told of hold what 1,500 hold, within 160 kB (107 bytes a request): the
    items of the last 1,024 finished.

    Before, each kept its four items for a week (about 2 kB): 3 MB more here.
    """
    outbox = HumanInputHandler().outbox
    with tracing() as traced:
        await requests(outbox, 0, 1_500)
        few = traced()
        await requests(outbox, 1_500, 1_500)
        many = traced()
    assert many - few < 160 * 1024


async def test_the_newest_finished_requests_keep_their_items() -> None:
    outbox = MemoryOutbox(finished=2)
    open_one = OutboxItem("open.announce", "open", 1e9, {"job": "announce"})
    await outbox.add([open_one])
    await requests(outbox, 0, 4)
    kept = [bool(await outbox.items_for(f"r{number}")) for number in range(4)]
    assert kept == [False, False, True, True]
    assert [item.item_id for item in await outbox.items_for("r3")] == [
        "r3.announce",
        "r3.announce.webhook.-",
        "r3.settle",
        "r3.settle.webhook.-",
    ]
    # A request not done with (its ending not sent yet) keeps its items whatever finishes.
    assert await outbox.items_for("open") == [open_one]
    assert await outbox.unended() == ["open"]


async def test_a_request_whose_delivery_is_still_owed_is_not_finished() -> None:
    outbox = MemoryOutbox(finished=1)
    await outbox.add([OutboxItem("a.settle", "a", 0.0, {"job": "settle"})])
    [step] = await outbox.claim("me", 0.0, 30.0, 8)
    await outbox.add([OutboxItem("a.settle.webhook.-", "a", 1e9, {"surface": "webhook"})])
    await outbox.complete(step.item_id, {})
    await requests(outbox, 0, 3)
    assert [item.item_id for item in await outbox.items_for("a")] == [
        "a.settle",
        "a.settle.webhook.-",
    ]


async def test_the_handler_keeps_notices_as_long_as_histories() -> None:
    """A handler that keeps more histories than the default count keeps their notices too."""
    handler = HumanInputHandler(store=MemoryStore(retention=8, audit_retention=5_000))
    await requests(handler.outbox, 0, 1_030)
    assert await handler.outbox.items_for("r0")


@pytest.mark.parametrize(("finished", "error"), [(0, ValueError), (True, TypeError)])
def test_a_count_below_one_is_refused(finished: int, error: type[Exception]) -> None:
    with pytest.raises(error, match="keep must be"):
        MemoryOutbox(finished=finished)


async def test_a_claimed_item_is_handed_out_due_at_its_leases_end() -> None:
    """As the durable stores hand it: a step renewed until its ``due`` (an escalation keeping
    whom it adds) stays held, where the time it was due at would hand it to another claim
    while it is still worked out."""
    outbox = MemoryOutbox()
    await outbox.add([OutboxItem("a.escalate0", "a", 5.0, {"job": "escalate"})])
    [step] = await outbox.claim("me", 10.0, 30.0, 8)
    assert step.due == 40.0
    assert await outbox.renew(step.item_id, "me", step.due, receipt={"escalating": ["bob"]})
    assert await outbox.claim("other", 20.0, 30.0, 8) == []

"""The handler's figures in this process, on every store: requests held, waits, deadlines,
notifications; what the desk's ``/metrics`` reads instead of the handler's insides."""

from __future__ import annotations

import asyncio

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.models.pending_input import PendingInputEvent
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HandlerStatistics, HumanInputHandler


async def test_a_fresh_handler_holds_nothing(make_handler: HandlerFactory) -> None:
    assert make_handler().statistics() == HandlerStatistics(0, 0, 0, 0)


async def test_parked_waits_and_their_deadline_count_until_the_answer() -> None:
    handler = HumanInputHandler()
    request = await handler.create("AskUserQuestion", {"question": "Which?"})
    waits = [asyncio.create_task(handler.wait(request.pending_id, timeout=60)) for _ in range(2)]
    await asyncio.sleep(0)  # both waits have parked

    assert handler.statistics() == HandlerStatistics(1, 2, 1, 0, deadline_timers=1)
    assert handler.resolve(request.pending_id, "B")
    assert await asyncio.gather(*waits) == ["B", "B"]
    # The one loop timer stays scheduled: it finds nothing due when it fires.
    assert handler.statistics() == HandlerStatistics(0, 0, 0, 0, deadline_timers=1)


async def test_the_deadline_timer_is_gone_once_it_fired_with_nothing_due() -> None:
    loop = asyncio.get_running_loop()
    handler = HumanInputHandler()
    request = await handler.create("AskUserQuestion", {"question": "Which?"}, timeout=0.01)
    assert handler.resolve(request.pending_id, "B")
    assert handler.statistics().deadline_timers == 1

    fired = loop.create_future()
    loop.call_at(request.deadline or 0.0, fired.set_result, None)  # after the handler's timer
    await fired

    assert handler.statistics() == HandlerStatistics(1, 0, 0, 0, deadline_timers=0)


async def test_a_request_is_held_until_its_wait_collects_it(make_handler: HandlerFactory) -> None:
    asker, desk = make_handler(), make_handler()
    request = await asker.create("AskUserQuestion", {"question": "Which?"})
    assert asker.statistics().active_requests == 1
    waiting = asyncio.create_task(asker.wait(request.pending_id, timeout=60))

    assert await desk.aresolve(request.pending_id, "B")

    assert await waiting == "B"
    figures = asker.statistics()
    assert (figures.active_requests, figures.parked_waits, figures.armed_deadlines) == (0, 0, 0)


async def test_a_running_notification_counts_until_it_returns() -> None:
    handler = HumanInputHandler()
    entered, leave = asyncio.Event(), asyncio.Event()

    async def notify(event: PendingInputEvent) -> None:
        entered.set()
        await leave.wait()

    handler.on_input_required = notify
    await handler.create("AskUserQuestion", {"question": "Told?"})
    await entered.wait()
    assert handler.statistics().running_notifications == 1

    leave.set()
    await handler.close()  # waits for the notification to return
    assert handler.statistics() == HandlerStatistics(0, 0, 0, 0)


# The look is the handler's own; fetch_many, which it reads with, is each store's contract.
@pytest.mark.parametrize("store_kind", ["sqlite", "redis"], indirect=True)
async def test_answered_requests_no_wait_collects_are_not_held_for_ever(
    make_handler: HandlerFactory,
) -> None:
    """A process that creates requests and never waits on them (a workflow's activities,
    a durable adapter's ``start()``) holds those still open, and not every answered one:
    whether answered here or by another process, they go at the next look at the store."""
    asker, desk = make_handler(), make_handler()
    still_open, answered = [], []
    for n in range(300):
        request = await asker.create_approval("pay", {"n": n}, approvers=("alice",))
        answered.append(request.pending_id)
        if n % 100 == 0:
            still_open.append(request.pending_id)
        else:
            answerer = asker if n % 2 else desk
            assert await answerer.aresolve(request.pending_id, approve(), by="alice")

    held = asker.statistics().active_requests
    assert len(still_open) <= held < 150, held
    assert set(still_open) <= set(asker.pending)
    # One forgotten here is read from the store by the wait that comes for it.
    for pending_id in (answered[1], answered[2]):  # answered here, and by the other process
        settled = await asker.wait_settled(pending_id, timeout=None)
        assert settled.settled_by == "alice"

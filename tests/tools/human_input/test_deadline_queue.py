"""The handler's deadline schedule: one timer, and memory that follows the open deadlines."""

from __future__ import annotations

import asyncio

from roomkit.models.pending_input import PendingInput
from roomkit.tools.human_input._deadlines import DeadlineQueue


def _request(n: int) -> PendingInput:
    return PendingInput(f"p{n}", "ask", {}, "", "", "")


async def test_deadlines_discarded_out_of_turn_leave_no_lasting_entries() -> None:
    loop = asyncio.get_running_loop()
    expired: list[PendingInput] = []
    deadlines = DeadlineQueue(expired.append)
    requests = [_request(n) for n in range(1_000)]
    start = loop.time() + 300
    for n, request in enumerate(requests):
        request.deadline = start + n
        deadlines.add(loop, request, request.deadline)

    for request in reversed(requests[1::2]):  # never at the head: out of turn
        deadlines.discard(request)

    assert len(deadlines) == 500
    assert len(deadlines.queue) <= 2 * 500 + 64
    for request in requests[::2]:
        deadlines.discard(request)
    assert len(deadlines) == 0
    assert len(deadlines.queue) <= 64
    assert expired == []


async def test_due_deadlines_expire_in_order_and_a_discarded_one_never_does() -> None:
    loop = asyncio.get_running_loop()
    expired: list[PendingInput] = []
    done: asyncio.Future[None] = loop.create_future()

    def expire(request: PendingInput) -> None:
        expired.append(request)
        if request is third:
            done.set_result(None)

    deadlines = DeadlineQueue(expire)
    first, second, third, earlier = (_request(n) for n in range(4))
    now = loop.time()
    for request, after in ((first, 0.01), (second, 0.02), (third, 0.03), (earlier, 0.005)):
        request.deadline = now + after
        deadlines.add(loop, request, request.deadline)  # ``earlier`` goes to the heap
    deadlines.discard(second)

    await done

    assert expired == [earlier, first, third]
    assert len(deadlines) == 0

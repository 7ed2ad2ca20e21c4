"""A wait's deadline is on the running loop's own clock, whatever loop runs it."""

from __future__ import annotations

import asyncio

import pytest

from roomkit import HumanInputTimeoutError
from roomkit.testing.clock import run_virtual
from roomkit.tools.human_input import HumanInputHandler


def test_a_wait_on_a_loop_with_its_own_clock_times_out_on_that_clock() -> None:
    async def main() -> tuple[float, float, float]:
        loop = asyncio.get_running_loop()
        handler = HumanInputHandler()
        request = await handler.create("ask", {"q": "?"})
        started = loop.time()
        with pytest.raises(HumanInputTimeoutError):
            await handler.wait(request.pending_id, timeout=3600)
        assert request.deadline is not None
        return started, request.deadline, loop.time()

    started, deadline, ended = run_virtual(main())
    assert deadline == pytest.approx(started + 3600)
    assert ended >= deadline


async def test_a_wait_on_asyncios_loop_sets_its_deadline_on_the_loop_clock() -> None:
    loop = asyncio.get_running_loop()
    handler = HumanInputHandler()
    request = await handler.create("ask", {"q": "?"})
    before = loop.time()
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=60))
    await asyncio.sleep(0)
    assert request.deadline is not None
    assert before + 60 <= request.deadline <= loop.time() + 60
    assert handler.resolve(request.pending_id, "yes")
    assert await waiting == "yes"

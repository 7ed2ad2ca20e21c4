"""The pauses of one stop are asked at once; a lone pause is asked in the run's own task."""

from __future__ import annotations

import asyncio

from roomkit.adapters._asking import all_at_once


async def test_a_lone_call_runs_in_the_callers_task() -> None:
    async def which() -> asyncio.Task[object] | None:
        return asyncio.current_task()

    assert await all_at_once([which()]) == [asyncio.current_task()]


async def test_several_calls_run_at_once_and_come_back_in_order() -> None:
    second_started = asyncio.Event()

    async def first() -> str:
        # Ends only once the second has started: the calls run at once, not in turn.
        await second_started.wait()
        return "first"

    async def second() -> str:
        second_started.set()
        return "second"

    assert await all_at_once([first(), second()]) == ["first", "second"]

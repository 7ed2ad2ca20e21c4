"""A call's clock counts the tool's own time: it stops while a person answers."""

from __future__ import annotations

import pytest

from roomkit.testing import advance, run_virtual
from roomkit.tools.call_clock import CallClock, current_call_clock


async def _work(before: float, waits: float, after: float) -> str:
    """Under a 10 s clock: ``before`` s of work, two overlapping waits for people, then
    ``after`` s of work."""
    async with CallClock(10) as clock:
        assert current_call_clock() is clock
        await advance(before)
        with clock.stopped():
            with clock.stopped():
                await advance(waits)
            # The first wait is over, the second is not: the clock is still stopped.
            await advance(waits)
        await advance(after)
    return "done"


def test_work_around_the_waits_is_counted_and_the_waits_are_not() -> None:
    assert run_virtual(_work(4, 100, 5)) == "done"


def test_the_clock_takes_up_where_it_stopped() -> None:
    """4 s before the waits and 7 s after them spend the 10 s between them."""
    with pytest.raises(TimeoutError):
        run_virtual(_work(4, 100, 7))


def test_a_wait_after_the_call_ended_changes_nothing() -> None:
    async def main() -> CallClock:
        async with CallClock(10) as clock:
            pass
        assert current_call_clock() is None
        with clock.stopped():
            await advance(20)
        return clock

    assert not run_virtual(main()).expired()

"""The timeouts an ask's activities are scheduled with: 30 s an attempt and a 5 s heartbeat
unless the ask passes its own ``ActivityTimeouts``; values no attempt can keep are refused
when the options are made. (A worker killed mid-activity, replaced within the heartbeat
timeout, is in ``test_temporal_crash.py``.)"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import scheduled_timeouts, wait_for_event, waiting
from tests.adapters.temporal.workflows import Ask

from roomkit.adapters.temporal import ActivityTimeouts
from roomkit.adapters.temporal._protocol import CREATE_ACTIVITY


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("spec", "expected"), [({}, (30.0, 5.0)), ({"heartbeat": 2}, (30.0, 2.0))])
async def test_an_asks_activities_carry_its_timeouts(
    world: World, spec: dict[str, Any], expected: tuple[float, float]
) -> None:
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, spec)
        await wait_for_event(handle, waiting)
        await handle.terminate()
    assert await scheduled_timeouts(handle, CREATE_ACTIVITY) == [expected]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"heartbeat": timedelta(0)}, "heartbeat must be a positive timedelta, got"),
        ({"heartbeat": 5}, "heartbeat must be a positive timedelta, got 5"),
        ({"start_to_close": timedelta(seconds=-1)}, "start_to_close must be a positive"),
        ({"start_to_close": timedelta(days=36_501)}, r"over the 3,153,600,000 \(a century\)"),
        ({"heartbeat": timedelta(seconds=30)}, r"heartbeat \(0:00:30\) must be shorter than"),
        ({"unpolled": timedelta(0)}, "unpolled must be a positive timedelta, got"),
        ({"unpolled": timedelta(days=36_501)}, r"a century\) a create may wait for a worker"),
        (
            {"start_to_close": timedelta(seconds=2), "heartbeat": timedelta(seconds=3)},
            r"shorter than start_to_close \(0:00:02\)",
        ),
    ],
)
def test_timeouts_no_attempt_can_keep_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ActivityTimeouts(**options)
    assert ActivityTimeouts(start_to_close=timedelta(minutes=2), heartbeat=timedelta(seconds=1))


def test_a_huge_value_refused_as_a_timeout_is_quoted_cut_short() -> None:
    with pytest.raises(ValueError, match="heartbeat must be a positive timedelta") as refused:
        ActivityTimeouts(heartbeat="h" * 1_000_000)  # type: ignore[arg-type]
    assert len(str(refused.value)) < 200


def test_an_integer_too_long_to_write_out_is_refused_as_a_timeout_saying_so() -> None:
    with pytest.raises(ValueError, match=r"must be a positive timedelta, got an integer of abo"):
        ActivityTimeouts(heartbeat=10**5_000)  # type: ignore[arg-type]

"""No deadline race: whoever is told ``True`` by resolve()/reject() sees that outcome win.

Each trial opens a request, lets ``wait()`` arm its deadline, and schedules the answer on the
virtual clock relative to ``request.deadline``:

- ``before``: the answer's timer falls just before the deadline, so the answer runs in the
  loop iteration that precedes the deadline's;
- ``at``: the answer's timer has the very same ``when`` as the deadline; half the trials
  schedule it before ``wait()`` arms the deadline and half just before the deadline, after
  every timer the handler armed, so both orders occur within the one tick;
- ``after``: a timer at the deadline hands the answer on with ``call_soon``, so it runs one
  iteration after the deadline fired, next to the woken waiter.

Whatever the order, the outcome must be consistent: if the settle returned ``True``,
``wait()`` returned that answer (or raised that rejection); otherwise it timed out; and the
retained outcome replays the same.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Literal

import pytest

from roomkit.core.exceptions import HumanInputRejectedError, HumanInputTimeoutError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.testing import virtual_runner
from roomkit.tools.human_input import HumanInputHandler

TRIALS = 10_000
JUST_BEFORE = 1e-6
TIMEOUTS = (0.25, 1.0, 3.7, 60.0, 300.0)

Position = Literal["before", "at", "after"]


async def _outcome(awaitable: asyncio.Future[str] | asyncio.Task[str]) -> tuple[str, str]:
    try:
        return ("answer", await awaitable)
    except HumanInputRejectedError as rejected:
        return ("rejected", str(rejected))
    except HumanInputTimeoutError:
        return ("timeout", "")


async def _trial(handler: HumanInputHandler, position: Position, n: int) -> tuple[str, str]:
    """Run one race; return (which settle won, a description of any inconsistency)."""
    loop = asyncio.get_running_loop()
    timeout = TIMEOUTS[n % len(TIMEOUTS)]
    resolving = n % 2 == 0
    text = f"{'answer' if resolving else 'reason'}-{n}"
    told: asyncio.Future[bool] = loop.create_future()

    request = await handler.create("Ask", {"n": n}, room_id="race")
    pending_id = request.pending_id

    def settle() -> None:
        settled = (handler.resolve if resolving else handler.reject)(pending_id, text)
        told.set_result(settled)

    early = position == "at" and n % 4 < 2
    expected_deadline = loop.time() + timeout
    if early:
        loop.call_at(expected_deadline, settle)
    waiter = loop.create_task(handler.wait(pending_id, timeout=timeout))
    await asyncio.sleep(0)
    deadline = request.deadline
    if deadline != expected_deadline:
        return ("", f"trial {n}: deadline {deadline} != {expected_deadline}")
    if position == "before":
        loop.call_at(deadline - JUST_BEFORE, settle)
    elif position == "at" and not early:
        # Scheduled at the very end, after any timer the handler has armed for the deadline.
        loop.call_at(deadline - JUST_BEFORE, loop.call_at, deadline, settle)
    elif position == "after":
        loop.call_at(deadline, loop.call_soon, settle)

    got = await _outcome(waiter)
    won = await told
    replayed = await _outcome(handler.wait(pending_id))

    if won:
        expected = ("answer", text) if resolving else ("rejected", text)
        status = PendingInputStatus.RESOLVED if resolving else PendingInputStatus.REJECTED
    else:
        expected = ("timeout", "")
        status = PendingInputStatus.TIMED_OUT
    if got != expected or replayed != expected or request.status is not status:
        return ("", f"trial {n} ({position}): told {won}, wait {got}, replay {replayed}")
    if handler.pending:
        return ("", f"trial {n} ({position}): request left active")
    return ("settle" if won else "deadline", "")


async def _race(position: Position) -> tuple[Counter[str], list[str]]:
    handler = HumanInputHandler()
    winners: Counter[str] = Counter()
    problems: list[str] = []
    for n in range(TRIALS):
        winner, problem = await _trial(handler, position, n)
        if problem:
            problems.append(problem)
        else:
            winners[winner] += 1
    # Once the clock has passed every deadline, no timer is left behind.
    await asyncio.sleep(max(TIMEOUTS))
    figures = handler.statistics()
    assert (figures.armed_deadlines, figures.deadline_timers) == (0, 0)
    return winners, problems


@pytest.fixture(scope="module")
def runner() -> object:
    with virtual_runner() as runner:
        yield runner


@pytest.mark.parametrize("position", ["before", "at", "after"])
def test_no_deadline_race(runner: asyncio.Runner, position: Position) -> None:
    winners, problems = runner.run(_race(position))

    assert problems[:5] == []
    assert sum(winners.values()) == TRIALS
    if position == "before":
        assert winners == Counter(settle=TRIALS)
    elif position == "after":
        assert winners == Counter(deadline=TRIALS)
    else:
        # Both orders happen within one tick: the race is really run.
        assert winners["settle"] > 0
        assert winners["deadline"] > 0

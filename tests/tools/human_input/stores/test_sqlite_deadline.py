"""The rule at the deadline, on SQLite with the real clock: an answer is accepted if and only if
the store records it before the timeout, which is when its check-and-set reads the clock
before the deadline; the acknowledgement may come later, and the answer is kept.

Answers are sent around each deadline while a wait is on the request, so that the waiting
handler's sweeper records timeouts at the same moments.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from contextlib import closing
from pathlib import Path

from roomkit.core.exceptions import HumanInputTimeoutError
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

REQUESTS = 40
TIMEOUT = 0.2


def settled_at(path: Path) -> dict[str, tuple[str, float]]:
    """Each record's status and the clock reading its settle recorded."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT pending_id, status, settled_at FROM roomkit_pending")
        return {pending_id: (status, at) for pending_id, status, at in rows}


async def test_an_answer_is_kept_iff_its_settle_read_the_clock_before_the_deadline(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"
    rng = random.Random(7)
    async with SQLiteStore(path, backstop_interval=0.01) as store:
        handler = HumanInputHandler(store=store)

        async def race(n: int) -> tuple[str, str, float, bool, str]:
            timeout = TIMEOUT + n * 0.005
            request = await handler.create("Ask", {"n": n}, room_id="room", timeout=timeout)
            waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
            assert request.deadline is not None
            # Not a wait for state: the answer is timed to leave within milliseconds of the
            # deadline, either side, to race the sweeper's timeout.
            await asyncio.sleep(request.deadline - store.clock() + rng.uniform(-0.03, 0.005))
            told = await handler.aresolve(request.pending_id, f"answer-{n}")
            try:
                outcome = await waiting
            except HumanInputTimeoutError:
                outcome = "timeout"
            return request.pending_id, f"answer-{n}", request.deadline, told, outcome

        results = await asyncio.gather(*(race(n) for n in range(REQUESTS)))
        await handler.close()
    recorded = settled_at(path)
    for pending_id, answer, deadline, told, outcome in results:
        status, at = recorded[pending_id]
        if told:
            assert (status, outcome) == ("resolved", answer)
            assert at < deadline
        else:
            assert (status, outcome) == ("timed_out", "timeout")
            assert at >= deadline

"""Benchmark of the hand-off: answers on file reaching the waits parked in one process.

A process that holds many waits must hand each answer to its wait in constant time, so the
rate at which waits end does not fall as more of them are parked. This script parks ``N``
waits on a SQLite store (a file in a temporary directory, on ``/dev/shm`` where there is
one), then answers them all from a second store on the same file (``aresolve``, 256 in
flight) in a thread of the same process, while the waits' event loop is held still; the
answers are all on file before the waits' side hears of any. It prints for each size the
settles per second, the hand-off rate (waits ended per second, from the moment the loop
runs again to the last wait's return, through the change feed) and the ratio of the
hand-off rate at the largest size to the one at the smallest. A ratio near 1 means the
hand-off costs the same per wait; one that falls with the size means each answer costs
more as more waits are parked.

Run ``python bench/bench_handoff.py`` (sizes 2,000 and 32,000; ``--largest N`` sets the
second, ``--quick`` makes it 8,000). No target: the figures are printed only.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from _harness import Row, progress, start
from bench_stores import IN_FLIGHT, PARK_BATCH, in_flight

from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

BACKSTOP = 300.0
DEFAULT_SIZES = (2_000, 32_000)
QUICK_SIZES = (2_000, 8_000)
# On a RAM disk, when there is one, a commit's fsync costs nothing: the settles go faster.
MEMORY = "/dev/shm" if os.path.isdir("/dev/shm") else None


async def hand_off(directory: Path, count: int) -> tuple[float, float]:
    """Park ``count`` waits, answer them here; settles per second and waits ended per second."""
    path = str(directory / f"handoff-{count}.db")
    store = SQLiteStore(path, backstop_interval=BACKSTOP)
    handler = HumanInputHandler(store=store)

    async def create(n: int) -> str:
        request = await handler.create("AskUserQuestion", {"n": n}, room_id=f"room-{n % 100}")
        return request.pending_id

    ids = await in_flight(IN_FLIGHT, range(count), create)
    ended = 0
    last_end = 0.0

    async def wait(pending_id: str) -> str:
        nonlocal ended, last_end
        answer = await handler.wait(pending_id, timeout=None)
        ended += 1
        last_end = time.perf_counter()
        return answer

    waits: list[asyncio.Task[str]] = []
    for first in range(0, count, PARK_BATCH):
        batch = ids[first : first + PARK_BATCH]
        waits += [asyncio.create_task(wait(pending_id)) for pending_id in batch]
        while handler.statistics().parked_waits < len(waits):  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    won: list[bool] = []
    # Held still on purpose: the answers are all on file before this loop hears of one.
    answering = threading.Thread(target=lambda: won.extend(asyncio.run(answer_all(path, ids))))
    start = time.perf_counter()
    answering.start()
    answering.join()
    settled = time.perf_counter() - start
    start = time.perf_counter()
    answers = await asyncio.gather(*waits)
    handed = last_end - start
    assert all(won)
    assert ended == count
    assert answers == [f"answer:{pending_id}" for pending_id in ids]
    await handler.close()
    await store.close()
    return count / settled, count / handed


async def answer_all(path: str, ids: Sequence[str]) -> list[bool]:
    """Answer every request through a store of its own on the file."""
    store = SQLiteStore(path)
    handler = HumanInputHandler(store=store)

    async def answer(pending_id: str) -> bool:
        return await handler.aresolve(pending_id, f"answer:{pending_id}")

    won = await in_flight(IN_FLIGHT, ids, answer)
    await store.close()
    return won


async def main(sizes: Sequence[int]) -> list[Row]:
    rows: list[Row] = []
    rates: list[float] = []
    with tempfile.TemporaryDirectory(prefix="roomkit-handoff-", dir=MEMORY) as directory:
        for size in sizes:
            progress(f"parking and answering {size:,} waits")
            settles, handed = await hand_off(Path(directory), size)
            rates.append(handed)
            rows.append(
                Row(
                    f"{size:,} waits parked: settles, hand-off",
                    f"{settles:,.0f} settles/s, {handed:,.0f} waits/s",
                    value=handed,
                    unit="/s",
                )
            )
    if len(rates) > 1:
        rows.append(
            Row(
                f"hand-off rate at {sizes[-1]:,} waits over at {sizes[0]:,}",
                f"{rates[-1] / rates[0]:.2f} (near 1: constant cost per wait)",
                ratio=rates[-1] / rates[0],
            )
        )
    return rows


if __name__ == "__main__":
    run = start("handoff", __doc__, numbers={"--largest": DEFAULT_SIZES[-1]})
    largest = (
        QUICK_SIZES[-1] if run.quick and "--largest" not in sys.argv else run.numbers["largest"]
    )
    sizes = (DEFAULT_SIZES[0], largest)
    rows = asyncio.run(main(sizes))
    run.table("The hand-off", rows, note="SQLite, answered through a second store in one process")
    sys.exit(run.finish())

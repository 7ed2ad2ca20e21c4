"""Benchmark of HumanInputHandler against a bare future and task, measured in the same run.

The floor is the least any await-for-a-person primitive can cost: per request, one future,
one task that awaits it, a yield so the task suspends, the result set, the task awaited.
The handler runs the same steps with its defaults: a 300 s timeout (so a deadline is armed)
and a retention of 128 outcomes.

Cases and targets:
    * sequential: create -> wait (in a task) -> yield -> resolve -> the task returns, one
      request at a time; at most 1.3x the floor per cycle.
    * 100,000 requests pending at once, each with its waiting task, then all resolved and
      all tasks awaited; at most 1.6x the floor's total.
    * memory: traced bytes per pending request with its suspended waiting task, at 10,000
      and 100,000 requests sharing one arguments dict; at most 1,500 bytes.

Times are medians of alternating runs of the floor and the handler, with the garbage
collector held off while timing; a ratio is the median of the ratios of neighbouring runs,
so a machine that speeds up or slows down meanwhile moves both sides alike. Times are the
process's CPU time (nothing here blocks), so that other processes on a shared machine do
not count while this one waits for a core. Each memory
figure comes from a fresh interpreter, so containers grown by an earlier case (the loop's
task registry, allocator free lists) do not hide part of the cost.

Run ``python bench/bench_human_input.py``: it prints a table and exits 0 (``--check`` makes
a missed target exit 1). The whole run takes about 30 seconds.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import random
import secrets
import statistics
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable, Iterator

from bench_options import options

from roomkit.tools.human_input import HumanInputHandler

ARGUMENTS = {"question": "Which colour should the button be?"}
SEQUENTIAL_CYCLES = 5_000
SEQUENTIAL_PAIRS = 41
CONCURRENT = 100_000
CONCURRENT_PAIRS = 7
MEMORY_SIZES = (10_000, 100_000)

SEQUENTIAL_TARGET = 1.3
CONCURRENT_TARGET = 1.6
BYTES_TARGET = 1_500

Run = Callable[[int], Awaitable[float]]


async def _await_future(future: asyncio.Future[str]) -> str:
    return await future


# -- the floor -------------------------------------------------------------------------------


async def floor_sequential(cycles: int) -> float:
    """Seconds for ``cycles`` rounds of future, task, yield, set_result, await."""
    loop = asyncio.get_running_loop()
    start = time.process_time()
    for _ in range(cycles):
        future: asyncio.Future[str] = loop.create_future()
        task = loop.create_task(_await_future(future))
        await asyncio.sleep(0)
        future.set_result("x")
        await task
    return time.process_time() - start


async def floor_concurrent(count: int) -> float:
    """Seconds to hold ``count`` futures with their tasks at once, then settle them all."""
    loop = asyncio.get_running_loop()
    start = time.process_time()
    futures: list[asyncio.Future[str]] = [loop.create_future() for _ in range(count)]
    tasks = [loop.create_task(_await_future(future)) for future in futures]
    await asyncio.sleep(0)
    for future in futures:
        future.set_result("x")
    for task in tasks:
        await task
    return time.process_time() - start


# -- the handler -----------------------------------------------------------------------------


async def handler_sequential(cycles: int) -> float:
    """Seconds for ``cycles`` rounds of create, wait in a task, yield, resolve, await."""
    loop = asyncio.get_running_loop()
    handler = HumanInputHandler()
    start = time.process_time()
    for _ in range(cycles):
        pending = await handler.create("AskUserQuestion", ARGUMENTS, room_id="r")
        task = loop.create_task(handler.wait(pending.pending_id))
        await asyncio.sleep(0)
        handler.resolve(pending.pending_id, "x")
        await task
    return time.process_time() - start


async def handler_concurrent(count: int) -> float:
    """Seconds to hold ``count`` requests with their waiting tasks, then resolve them all."""
    loop = asyncio.get_running_loop()
    handler = HumanInputHandler()
    start = time.process_time()
    ids = [
        (await handler.create("AskUserQuestion", ARGUMENTS, room_id="r")).pending_id
        for _ in range(count)
    ]
    tasks = [loop.create_task(handler.wait(pending_id)) for pending_id in ids]
    await asyncio.sleep(0)
    for pending_id in ids:
        handler.resolve(pending_id, "x")
    for task in tasks:
        await task
    return time.process_time() - start


# -- measuring -------------------------------------------------------------------------------


async def _timed(run: Run, size: int) -> float:
    gc.collect()
    gc.disable()
    try:
        return await run(size)
    finally:
        gc.enable()


async def compare(floor: Run, ours: Run, size: int, pairs: int) -> tuple[float, float, float]:
    """Median seconds of the floor and of ours, and the median ratio of neighbouring runs."""
    await _timed(floor, size // 10)
    await _timed(ours, size // 10)
    floors: list[float] = []
    oures: list[float] = []
    for _ in range(pairs):
        floors.append(await _timed(floor, size))
        oures.append(await _timed(ours, size))
    ratios = [o / f for f, o in zip(floors, oures, strict=True)]
    return statistics.median(floors), statistics.median(oures), statistics.median(ratios)


async def bytes_per_request(count: int, *, floor: bool) -> float:
    """Traced bytes per pending request (or bare future) with its suspended waiting task."""
    loop = asyncio.get_running_loop()
    handler = HumanInputHandler()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    if floor:
        futures: list[asyncio.Future[str]] = [loop.create_future() for _ in range(count)]
        tasks = [loop.create_task(_await_future(future)) for future in futures]
    else:
        ids = [
            (await handler.create("AskUserQuestion", ARGUMENTS, room_id="r")).pending_id
            for _ in range(count)
        ]
        tasks = [loop.create_task(handler.wait(pending_id)) for pending_id in ids]
    await asyncio.sleep(0)
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    if floor:
        for future in futures:
            future.set_result("x")
    else:
        for pending_id in ids:
            handler.resolve(pending_id, "x")
    await asyncio.gather(*tasks)
    return traced / count


def bytes_in_fresh_interpreter(count: int, *, floor: bool) -> float:
    """:func:`bytes_per_request`, run by a new interpreter so no earlier case skews it."""
    which = "floor" if floor else "ours"
    command = [sys.executable, __file__, "--bytes", which, str(count)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout)


def id_costs(count: int = 200_000) -> list[tuple[str, float]]:
    """Nanoseconds per id for ways of making a unique request id (best of three)."""
    pool = os.urandom(16 * 256).hex()
    slices = itertools.cycle(range(0, len(pool), 32))
    prefix = os.urandom(8).hex()
    counter = itertools.count()

    def batches() -> Iterator[str]:  # the handler's way
        while True:
            batch = os.urandom(16 * 64).hex()
            for start in range(0, len(batch), 32):
                yield batch[start : start + 32]

    makers: list[tuple[str, Callable[[], str]]] = [
        ("os.urandom(16).hex()", lambda: os.urandom(16).hex()),
        ("secrets.token_hex(16)", lambda: secrets.token_hex(16)),
        ("uuid.uuid4().hex", lambda: uuid.uuid4().hex),
        ("64 ids per os.urandom call (handler)", batches().__next__),
        ("slice of a 4 KiB pool (no refill)", lambda: pool[(i := next(slices)) : i + 32]),
        ("random.getrandbits (guessable)", lambda: f"{random.getrandbits(128):032x}"),
        ("prefix + counter (guessable)", lambda: f"{prefix}{next(counter):016x}"),
    ]
    return [
        (name, min(_seconds(make, count) for _ in range(3)) / count * 1e9) for name, make in makers
    ]


def _seconds(make: Callable[[], str], count: int) -> float:
    start = time.process_time()
    for _ in range(count):
        make()
    return time.process_time() - start


# -- the report ------------------------------------------------------------------------------


def _row(case: str, floor: str, ours: str, ratio: float, target: str, ok: bool) -> list[str]:
    return [case, floor, ours, f"{ratio:.2f}x", target, "pass" if ok else "MISS"]


async def main() -> int:
    """Print the table; return the number of missed targets."""
    rows: list[list[str]] = []

    floor_s, ours_s, ratio = await compare(
        floor_sequential, handler_sequential, SEQUENTIAL_CYCLES, SEQUENTIAL_PAIRS
    )
    per_cycle = 1e6 / SEQUENTIAL_CYCLES
    rows.append(
        _row(
            "sequential create/wait/resolve",
            f"{floor_s * per_cycle:.2f} us/cycle",
            f"{ours_s * per_cycle:.2f} us/cycle",
            ratio,
            f"<= {SEQUENTIAL_TARGET}x",
            ratio <= SEQUENTIAL_TARGET,
        )
    )

    floor_c, ours_c, ratio = await compare(
        floor_concurrent, handler_concurrent, CONCURRENT, CONCURRENT_PAIRS
    )
    rows.append(
        _row(
            f"{CONCURRENT:,} pending at once",
            f"{floor_c * 1e3:.0f} ms",
            f"{ours_c * 1e3:.0f} ms",
            ratio,
            f"<= {CONCURRENT_TARGET}x",
            ratio <= CONCURRENT_TARGET,
        )
    )

    for count in MEMORY_SIZES:
        floor_b = bytes_in_fresh_interpreter(count, floor=True)
        ours_b = bytes_in_fresh_interpreter(count, floor=False)
        rows.append(
            _row(
                f"memory, {count:,} pending",
                f"{floor_b:,.0f} B/request",
                f"{ours_b:,.0f} B/request",
                ours_b / floor_b,
                f"<= {BYTES_TARGET:,} B",
                ours_b <= BYTES_TARGET,
            )
        )

    header = ["case", "floor", "ours", "ratio", "target", "result"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(f"Python {sys.version.split()[0]}; floor = a bare future and task per request")
    for row in [header, ["-" * width for width in widths], *rows]:
        print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))

    print("\nrequest ids, ns each:")
    for name, cost in id_costs():
        print(f"  {name:<38} {cost:6.0f}")
    return sum(row[-1] == "MISS" for row in rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--bytes"]:
        which, count = sys.argv[2], int(sys.argv[3])
        print(asyncio.run(bytes_per_request(count, floor=which == "floor")))
        sys.exit(0)
    given = options(__doc__, ("--check",), sys.argv[1:])
    missed = asyncio.run(main())
    sys.exit(1 if missed and "--check" in given else 0)

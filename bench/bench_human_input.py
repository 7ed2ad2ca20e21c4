"""Benchmark of HumanInputHandler against a bare future and task, measured in the same run.

The floor is the least any await-for-a-person primitive can cost: per request, one future,
one task that awaits it, a yield so the task suspends, the result set, the task awaited.
The handler runs the same steps with its defaults: a 300 s timeout (so a deadline is armed)
and a retention of 128 outcomes.

Cases and targets:
    * sequential: create -> wait (in a task) -> yield -> resolve -> the task returns, one
      request at a time; at most 1.5x the floor per cycle.
    * 100,000 requests pending at once, each with its waiting task, then all resolved and
      all tasks awaited; at most 2.0x the floor's total.
    * memory: traced bytes per pending request with its suspended waiting task, at 10,000
      and 100,000 requests sharing one arguments dict; at most 1,400 bytes.
    * memory that stays: traced bytes after 1,000 and after 100,000 create -> resolve ->
      wait cycles on one handler (retention 128); at most 2 MB apart.

With ``UPSTREAM_PYTHON`` naming an interpreter that has RoomKit 0.109 installed (a venv of
its own: ``pip install roomkit==0.109.0``), the same cases run there too, in a subprocess
that imports that interpreter's ``roomkit`` and times its own floor, and the table gains an
upstream column and our speed-up over it (its ratio to its floor over ours to ours, so that
the two interpreters and the load of the moment cancel out): at least 1.3x on the
sequential cycle.

Times are medians of alternating runs of the floor and the handler, with the garbage
collector held off while timing; a ratio is the median of the ratios of neighbouring runs,
so a machine that speeds up or slows down meanwhile moves both sides alike. Times are the
process's CPU time (nothing here blocks), so that other processes on a shared machine do
not count while this one waits for a core. Each memory
figure comes from a fresh interpreter, so containers grown by an earlier case (the loop's
task registry, allocator free lists) do not hide part of the cost.

Run ``python bench/bench_human_input.py``: it prints a table and exits 0 (``--check`` makes
a missed target exit 1). The whole run takes about a minute (two with upstream).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
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

from _harness import Row, start

from roomkit.tools.human_input import HumanInputHandler  # upstream's, in its subprocess

ARGUMENTS = {"question": "Which colour should the button be?"}
SEQUENTIAL_CYCLES = 5_000
SEQUENTIAL_PAIRS = 41
CONCURRENT = 100_000
CONCURRENT_PAIRS = 7
MEMORY_SIZES = (10_000, 100_000)
SETTLED_SIZES = (1_000, 100_000)

SEQUENTIAL_TARGET = 1.5
CONCURRENT_TARGET = 2.0
BYTES_TARGET = 1_400
SETTLED_TARGET = 2 * 1024 * 1024
UPSTREAM_TARGET = 1.3
UPSTREAM = os.environ.get("UPSTREAM_PYTHON")
"""An interpreter with RoomKit 0.109 installed, or ``None``."""

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


async def settled_memory(count: int) -> int:
    """Traced bytes after ``count`` create -> resolve -> wait cycles on one handler."""
    handler = HumanInputHandler()
    tracemalloc.start()
    for _ in range(count):
        pending = await handler.create("AskUserQuestion", ARGUMENTS, room_id="r")
        handler.resolve(pending.pending_id, "x")
        await handler.wait(pending.pending_id)
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return traced


def in_fresh_interpreter(*arguments: str, python: str = sys.executable) -> str:
    """What this script prints when ``python`` runs it with ``arguments`` (a worker case)."""
    command = [python, __file__, *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def bytes_in_fresh_interpreter(count: int, *, floor: bool, python: str = sys.executable) -> float:
    """:func:`bytes_per_request`, run by a new interpreter so no earlier case skews it."""
    return float(
        in_fresh_interpreter("--bytes", "floor" if floor else "ours", str(count), python=python)
    )


def upstream(case: str) -> dict[str, float] | None:
    """The case measured by the upstream interpreter, when one is named."""
    if UPSTREAM is None:
        return None
    return dict(json.loads(in_fresh_interpreter("--compare", case, python=UPSTREAM)))


def id_costs(count: int = 200_000) -> list[tuple[str, float]]:
    """Nanoseconds per id for ways of making a unique request id (best of three)."""
    pool = os.urandom(16 * 256).hex()
    slices = itertools.cycle(range(0, len(pool), 32))
    prefix = os.urandom(8).hex()
    counter = itertools.count()

    def batches() -> Iterator[str]:  # the handler's way
        while True:
            yield from os.urandom(16 * 64).hex(" ", 16).split()

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

CASES: dict[str, tuple[Run, Run, int, int]] = {
    "sequential": (floor_sequential, handler_sequential, SEQUENTIAL_CYCLES, SEQUENTIAL_PAIRS),
    "concurrent": (floor_concurrent, handler_concurrent, CONCURRENT, CONCURRENT_PAIRS),
}


async def compared(case: str) -> dict[str, float]:
    """The case's median floor and handler seconds, and their median ratio."""
    floor, ours, size, pairs = CASES[case]
    floor_s, ours_s, ratio = await compare(floor, ours, size, pairs)
    return {"floor": floor_s, "ours": ours_s, "ratio": ratio}


class Report:
    """The table's rows, the upstream columns when an upstream interpreter is named, and
    the count of missed targets."""

    def __init__(self) -> None:
        self.header = ["case", "floor", "ours", "ratio", "target", "result"]
        if UPSTREAM is not None:
            self.header[4:4] = ["upstream 0.109", "its ratio", "speed-up"]
        self.rows: list[list[str]] = []
        self.results: list[Row] = []
        self.missed = 0

    def add(self, case: str, figures: tuple[str, str, str, str], ok: bool, *up: str) -> None:
        """A row: the case, its floor, ours, ratio and target, and the upstream figures."""
        self.missed += not ok
        row = [case, *figures, "pass" if ok else "MISS"]
        if UPSTREAM is not None:
            row[4:4] = list(up) if up else ["", "", ""]
        self.rows.append(row)
        floor, ours, ratio, target = figures
        figure = f"{ours} beside {floor} ({ratio})" if floor else f"{ours} ({ratio})"
        if up and up[0]:
            figure += f"; upstream {up[0]}" + (f", speed-up {up[2]}" if up[2] else "")
        elif up and up[2]:
            figure = f"{up[2]}"
        self.results.append(Row(case.strip(), figure, target, ok))

    def print(self) -> None:
        header, rows = self.header, self.rows
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, ["-" * width for width in widths], *rows]:
            print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


async def speed_rows(report: Report) -> None:
    """The two timed cases, each against its floor, and upstream's when it is named."""
    for case, label, unit, scale, target in (
        (
            "sequential",
            "sequential create/wait/resolve",
            "us/cycle",
            1e6 / SEQUENTIAL_CYCLES,
            SEQUENTIAL_TARGET,
        ),
        ("concurrent", f"{CONCURRENT:,} pending at once", "ms", 1e3, CONCURRENT_TARGET),
    ):
        ours = await compared(case)
        figures = (
            f"{ours['floor'] * scale:,.2f} {unit}",
            f"{ours['ours'] * scale:,.2f} {unit}",
            f"{ours['ratio']:.2f}x",
            f"<= {target}x",
        )
        theirs = upstream(case)
        if theirs is None:
            report.add(label, figures, ours["ratio"] <= target)
            continue
        # Each side over its own floor: the interpreters and the load of the moment cancel.
        speed_up = theirs["ratio"] / ours["ratio"]
        up = (f"{theirs['ours'] * scale:,.2f} {unit}", f"{theirs['ratio']:.2f}x")
        report.add(label, figures, ours["ratio"] <= target, *up, f"{speed_up:.2f}x")
        if case == "sequential":
            wanted = ("", "", "", f">= {UPSTREAM_TARGET}x")
            ok = speed_up >= UPSTREAM_TARGET
            report.add("  speed-up over upstream", wanted, ok, "", "", f"{speed_up:.2f}x")


def memory_rows(report: Report) -> None:
    """Bytes per pending request, and what stays after many settles."""
    for count in MEMORY_SIZES:
        floor_b = bytes_in_fresh_interpreter(count, floor=True)
        ours_b = bytes_in_fresh_interpreter(count, floor=False)
        figures = (
            f"{floor_b:,.0f} B/request",
            f"{ours_b:,.0f} B/request",
            f"{ours_b / floor_b:.2f}x",
            f"<= {BYTES_TARGET:,} B",
        )
        up: tuple[str, ...] = ()
        if UPSTREAM is not None:
            theirs_b = bytes_in_fresh_interpreter(count, floor=False, python=UPSTREAM)
            up = (f"{theirs_b:,.0f} B/request", "", "")
        report.add(f"memory, {count:,} pending", figures, ours_b <= BYTES_TARGET, *up)

    few, many = (int(in_fresh_interpreter("--settled", str(count))) for count in SETTLED_SIZES)
    up = ()
    if UPSTREAM is not None:
        theirs = [
            int(in_fresh_interpreter("--settled", str(n), python=UPSTREAM)) for n in SETTLED_SIZES
        ]
        up = (f"{theirs[0] / 1e6:.2f} / {theirs[1] / 1e6:.2f} MB", "", "")
    figures = (
        "",
        f"{few / 1e6:.2f} / {many / 1e6:.2f} MB",
        f"+{(many - few) / 1e6:.2f} MB",
        f"<= +{SETTLED_TARGET / 2**20:.0f} MiB",
    )
    label = f"memory after {SETTLED_SIZES[0]:,} / {SETTLED_SIZES[1]:,} settled"
    report.add(label, figures, many - few <= SETTLED_TARGET, *up)


async def main() -> tuple[list[Row], list[Row]]:
    """Print the table; return its rows and the request ids' costs."""
    report = Report()
    await speed_rows(report)
    memory_rows(report)
    print(f"Python {sys.version.split()[0]}; floor = a bare future and task per request")
    if UPSTREAM is not None:
        version = in_fresh_interpreter("--version", python=UPSTREAM).strip()
        print(f"upstream: RoomKit {version}, run by {UPSTREAM}")
    report.print()

    ids = [Row(name, f"{cost:,.0f} ns", value=cost, unit="ns") for name, cost in id_costs()]
    return report.results, ids


def worker(arguments: list[str]) -> None:
    """Run one case as a worker and print its result (for a fresh or upstream interpreter)."""
    if arguments[0] == "--bytes":
        print(asyncio.run(bytes_per_request(int(arguments[2]), floor=arguments[1] == "floor")))
    elif arguments[0] == "--settled":
        print(asyncio.run(settled_memory(int(arguments[1]))))
    elif arguments[0] == "--compare":
        print(json.dumps(asyncio.run(compared(arguments[1]))))
    else:
        from importlib.metadata import version

        print(version("roomkit"))


if __name__ == "__main__":
    if sys.argv[1:2] and sys.argv[1] in ("--bytes", "--settled", "--compare", "--version"):
        worker(sys.argv[1:])
        sys.exit(0)
    run = start("human_input", __doc__)
    rows, ids = asyncio.run(main())
    run.table("The handler beside a bare future and task", rows, note="CPU time, same run")
    run.table("Request ids", ids)
    sys.exit(run.finish())

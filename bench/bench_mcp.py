"""Benchmark of an MCP tool call answered at once, through a handler on the same SQLite store.

Case and target:
    * An SDK client (in-process) calls ``AskUserQuestion`` on ``HumanInputMCPServer``; a
      listener answers each request with ``aresolve`` as soon as the handler says it was
      created. The baseline is the same ask without MCP: ``create`` + ``aresolve`` +
      ``wait`` on the same handler and SQLite file (the store's in-process wake-up path).
      Target: the MCP call's p50 <= the baseline's p50 + 5 ms.

Run ``python bench/bench_mcp.py``: it prints a table and exits 0 (``--check`` makes a missed
target exit 1; ``--calls N`` sets the number of calls, 200 by default).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client

from roomkit.mcp import HumanInputMCPServer
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores import PendingChange, PendingChangeKind
from roomkit.tools.human_input.stores.sqlite import SQLiteStore

TARGET_MS = 5.0


def _ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000


async def _baseline(handler: HumanInputHandler, calls: int) -> list[float]:
    samples: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        pending = await handler.create("AskUserQuestion", {"question": "Go?"}, room_id="mcp")
        await handler.aresolve(pending.pending_id, "yes")
        await handler.wait(pending.pending_id, timeout=30)
        samples.append(time.perf_counter() - started)
    return samples


async def _through_mcp(handler: HumanInputHandler, calls: int) -> list[float]:
    server = HumanInputMCPServer(handler, actor="bench")
    answering: set[asyncio.Task[bool]] = set()

    def answer(change: PendingChange) -> None:
        if change.kind is PendingChangeKind.CREATED:
            task = asyncio.get_running_loop().create_task(
                handler.aresolve(change.pending_id, "yes")
            )
            answering.add(task)
            task.add_done_callback(answering.discard)

    undo = handler.subscribe(answer)
    samples: list[float] = []
    try:
        async with Client(server.server) as client:
            await client.call_tool("AskUserQuestion", {"question": "Warm-up?"})
            for _ in range(calls):
                started = time.perf_counter()
                result = await client.call_tool("AskUserQuestion", {"question": "Go?"})
                samples.append(time.perf_counter() - started)
                assert not result.is_error, result
    finally:
        undo()
    return samples


async def run(calls: int) -> bool:
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(str(Path(folder) / "bench.db"))
        handler = HumanInputHandler(store=store)
        try:
            base = _ms(await _baseline(handler, calls))
            mcp = _ms(await _through_mcp(handler, calls))
        finally:
            await handler.close()
            await store.close()
    print(f"{'case':<44} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'handler alone (create, aresolve, wait)':<44} {base[0]:>8.2f} {base[1]:>8.2f}")
    print(f"{'MCP tool call, answered at once':<44} {mcp[0]:>8.2f} {mcp[1]:>8.2f}")
    overhead = mcp[0] - base[0]
    met = overhead <= TARGET_MS
    print(
        f"MCP overhead p50: {overhead:.2f} ms (target <= {TARGET_MS:g} ms): "
        + ("met" if met else "MISSED")
    )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    met = asyncio.run(run(args.calls))
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of an MCP tool call answered at once, through a handler on the same SQLite store.

Case and target:
    * An SDK client (in-process) calls ``AskUserQuestion`` on ``HumanInputMCPServer``; a
      listener answers each request with ``aresolve`` as soon as the handler says it was
      created. The baseline is the same ask without MCP: ``create`` + ``aresolve`` +
      ``wait`` on the same handler and SQLite file (the store's in-process wake-up path).
      Target: the MCP call's p50 <= the baseline's p50 + 5 ms.

Run ``python bench/bench_mcp.py``: it prints a table and exits 0 (``--check`` makes a missed
target exit 1; ``--calls N`` sets the number of calls, 200 by default, 50 with ``--quick``).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _harness import Row, percentile, start
from mcp import Client

from roomkit.mcp import HumanInputMCPServer
from roomkit.stores import PendingChange, PendingChangeKind
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

TARGET_MS = 5.0


def _ms(samples: list[float]) -> tuple[float, float]:
    return statistics.median(samples) * 1000, percentile(samples, 0.99) * 1000


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


async def run(calls: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(str(Path(folder) / "bench.db"))
        handler = HumanInputHandler(store=store)
        try:
            base = _ms(await _baseline(handler, calls))
            mcp = _ms(await _through_mcp(handler, calls))
        finally:
            await handler.close()
            await store.close()
    overhead = mcp[0] - base[0]
    return [
        Row(
            "handler alone (create, aresolve, wait): p50, p99",
            f"{base[0]:.2f} ms, {base[1]:.2f} ms",
            value=base[0],
            unit="ms",
        ),
        Row(
            "MCP tool call, answered at once: p50, p99",
            f"{mcp[0]:.2f} ms, {mcp[1]:.2f} ms",
            value=mcp[0],
            unit="ms",
            ratio=mcp[0] / base[0],
        ),
        Row(
            "MCP overhead, p50",
            f"{overhead:.2f} ms",
            f"<= {TARGET_MS:g} ms",
            overhead <= TARGET_MS,
            value=overhead,
            unit="ms",
        ),
    ]


if __name__ == "__main__":
    run_ = start("mcp", __doc__, numbers={"--calls": 200})
    calls = 50 if run_.quick and "--calls" not in sys.argv else run_.numbers["calls"]
    run_.table("MCP tool calls", asyncio.run(run(calls)), note=f"{calls} calls, SQLite store")
    sys.exit(run_.finish())

"""Benchmark of the answer desk on loopback: one uvicorn worker, the memory store.

The desk runs in a child process (``--serve``): a kit, a handler and ``create_desk_app``,
served by uvicorn with one worker, plus a small control route that this script uses to open
requests whose waiting tools record, on the shared monotonic clock, when they wake. The load
generator is this process: a minimal keep-alive HTTP/1.1 client (so that the client's own
cost stays small) and the ``websockets`` client for the sockets. The rate limit is lifted
for the run (every answer comes from one actor).

Cases and targets:
    * wake: one answer at a time, from the POST leaving the client to the waiting tool
      waking in the desk process; p50/p99, target p99 <= 5 ms.
    * throughput: answers per second with 32 connections answering open requests;
      target >= 1,000/s.
    * fan-out: 1,000 connected WebSocket clients, one actor each; a new question for each;
      from its creation to its client receiving it, p50/p99, target p99 <= 50 ms.

For each case the CPU time of both sides is printed, so the load generator's own cost is
visible. Run ``python bench/bench_desk.py`` (``--quick``: a quarter of the work); it prints
figures and exits 0 (no assertions).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

from _harness import Row, percentile, start

SECRET = "bench-desk-secret-0123456789abcdef"
WAKES = 2_000
THROUGHPUT = 10_000
CONNECTIONS = 32
SOCKETS = 1_000


# -- the desk process --------------------------------------------------------------------------


def serve() -> None:
    """Run the desk with a control route; print its port, serve until stdin closes."""
    import uvicorn
    from fastapi import APIRouter

    from roomkit import RoomKit
    from roomkit.desk import DeskLimits, create_desk_app
    from roomkit.tools.human_input import HumanInputHandler

    handler = HumanInputHandler(retention=THROUGHPUT + WAKES)
    limits = DeskLimits(rate=1e9, burst=1_000_000_000)
    # No page: its catch-all mount would shadow the control route added below.
    app = create_desk_app(
        RoomKit(), handler=handler, secret=SECRET, limits=limits, static_dir="/nonexistent"
    )
    wakes: dict[str, float] = {}
    waiters: set[asyncio.Task[None]] = set()
    routes = APIRouter(prefix="/bench")

    async def wait(pending_id: str) -> None:
        await handler.wait(pending_id, timeout=None)
        wakes[pending_id] = time.perf_counter()

    @routes.post("/ask")
    async def ask(body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, float] = {}
        for actor in body["actors"]:
            request = await handler.create(
                "AskUserQuestion", {"question": "Go?"}, room_id="room", actor_id=actor
            )
            created[request.pending_id] = time.perf_counter()
            if body.get("wait"):
                task = asyncio.create_task(wait(request.pending_id))
                waiters.add(task)
                task.add_done_callback(waiters.discard)
        return {"created": created}

    @routes.get("/wakes")
    async def read_wakes() -> dict[str, Any]:
        taken = dict(wakes)
        wakes.clear()
        return {"wakes": taken, "cpu": time.process_time()}

    app.include_router(routes)
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say they are TCP.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    print(sock.getsockname()[1], flush=True)
    # As ``roomkit desk`` serves it: no per-message deflate (frames are small JSON).
    config = uvicorn.Config(
        app,
        workers=1,
        log_level="warning",
        access_log=False,
        ws_max_size=64 * 1024,
        ws_per_message_deflate=False,
    )
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


# -- the load generator ------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.auth = f"Authorization: Bearer {token}\r\n" if token else ""

    async def open(self) -> Connection:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{self.auth}"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.writer.write(head.encode() + data)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode().split("\r\n")
        length = next(
            int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length")
        )
        payload = await self.reader.readexactly(length)
        return int(lines[0].split()[1]), json.loads(payload)

    def close(self) -> None:
        self.writer.close()


async def control(port: int, method: str, path: str, body: Any = None) -> Any:
    """A call to the desk process's control route, on a connection of its own."""
    connection = await Connection(port, "").open()
    try:
        return (await connection.call(method, path, body))[1]
    finally:
        connection.close()


ROWS: list[Row] = []
"""The figures of the cases, in order."""


def quantiles(samples: list[float]) -> tuple[float, float]:
    return statistics.median(samples) * 1e3, percentile(samples, 0.99) * 1e3


def cpu_row(case: str, client: float, server: float, count: int, unit: str) -> Row:
    return Row(
        f"{case}: CPU per {unit}, load generator / desk",
        f"{client / count * 1e6:.0f} / {server / count * 1e6:.0f} us",
    )


async def wake_case(port: int, token: str) -> None:
    client = await Connection(port, token).open()
    opened = await control(port, "POST", "/bench/ask", {"actors": ["alice"] * WAKES, "wait": True})
    ids = list(opened["created"])
    before = await control(port, "GET", "/bench/wakes")
    sent: dict[str, float] = {}
    cpu = time.process_time()
    for pending_id in ids:
        sent[pending_id] = time.perf_counter()
        status, _ = await client.call(
            "POST", f"/api/requests/{pending_id}/answer", {"answer": "go"}
        )
        assert status == 200, status
    client_cpu = time.process_time() - cpu
    after = await control(port, "GET", "/bench/wakes")
    wake = [after["wakes"][key] - sent[key] for key in ids]
    p50, p99 = quantiles(wake)
    ROWS.append(
        Row(
            f"wake: {len(ids):,} answers one at a time, POST sent to the tool awake: p50, p99",
            f"{p50:.2f} ms, {p99:.2f} ms",
            "p99 <= 5 ms",
            p99 <= 5,
            value=p99,
            unit="ms",
        )
    )
    ROWS.append(cpu_row("wake", client_cpu, after["cpu"] - before["cpu"], len(ids), "answer"))
    client.close()


async def throughput_case(port: int, token: str) -> None:
    opened = await control(
        port, "POST", "/bench/ask", {"actors": ["alice"] * THROUGHPUT, "wait": True}
    )
    queue = list(opened["created"])
    before = await control(port, "GET", "/bench/wakes")
    connections = [await Connection(port, token).open() for _ in range(CONNECTIONS)]

    async def answer_from(connection: Connection) -> None:
        while queue:
            pending_id = queue.pop()
            status, _ = await connection.call(
                "POST", f"/api/requests/{pending_id}/answer", {"answer": "go"}
            )
            assert status == 200, status

    cpu, start = time.process_time(), time.perf_counter()
    await asyncio.gather(*(answer_from(connection) for connection in connections))
    elapsed, client_cpu = time.perf_counter() - start, time.process_time() - cpu
    after = await control(port, "GET", "/bench/wakes")
    rate = THROUGHPUT / elapsed
    ROWS.append(
        Row(
            f"throughput: {THROUGHPUT:,} answers over {CONNECTIONS} connections",
            f"{rate:,.0f} answers/s ({len(after['wakes']):,} tools woke)",
            ">= 1,000/s",
            rate >= 1_000,
            value=rate,
            unit="/s",
        )
    )
    cpu = after["cpu"] - before["cpu"]
    ROWS.append(cpu_row("throughput", client_cpu, cpu, THROUGHPUT, "answer"))
    for connection in connections:
        connection.close()


async def fanout_case(port: int) -> None:
    from websockets.asyncio.client import connect

    from roomkit.desk import issue_token

    actors = [f"person{index}" for index in range(SOCKETS)]
    received: dict[str, float] = {}
    ready = asyncio.Event()
    done = asyncio.Event()
    sockets = []
    for actor in actors:
        ws = await connect(f"ws://127.0.0.1:{port}/api/ws", max_queue=None)
        await ws.send(json.dumps({"type": "auth", "token": issue_token(SECRET, actor)}))
        json.loads(await ws.recv())  # the snapshot
        sockets.append(ws)

    async def listen(ws: Any) -> None:
        frame = json.loads(await ws.recv())
        received[frame["request"]["id"]] = time.perf_counter()
        if len(received) == SOCKETS:
            done.set()

    listeners = [asyncio.create_task(listen(ws)) for ws in sockets]
    ready.set()
    before = await control(port, "GET", "/bench/wakes")
    cpu, start = time.process_time(), time.perf_counter()
    opened = await control(port, "POST", "/bench/ask", {"actors": actors})
    await done.wait()
    client_cpu = time.process_time() - cpu
    after = await control(port, "GET", "/bench/wakes")
    created = opened["created"]
    latency = [received[key] - created[key] for key in created]
    last = max(received.values()) - start
    p50, p99 = quantiles(latency)
    ROWS.append(
        Row(
            f"fan-out: {SOCKETS:,} sockets, a question for each, created to received: p50, p99",
            f"{p50:.2f} ms, {p99:.2f} ms (all in {last * 1e3:.1f} ms)",
            "p99 <= 50 ms",
            p99 <= 50,
            value=p99,
            unit="ms",
        )
    )
    ROWS.append(cpu_row("fan-out", client_cpu, after["cpu"] - before["cpu"], SOCKETS, "question"))
    await asyncio.gather(*listeners)
    await asyncio.gather(*(ws.close() for ws in sockets))


async def run(port: int) -> None:
    from roomkit.desk import issue_token

    token = issue_token(SECRET, "alice")
    await wake_case(port, token)
    await throughput_case(port, token)
    await fanout_case(port)


def main() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    desk = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert desk.stdout is not None
        port = int(desk.stdout.readline())
        asyncio.run(run(port))
    finally:
        desk.terminate()
        desk.wait()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        bench = start("desk", __doc__)
        if bench.quick:
            WAKES, THROUGHPUT, SOCKETS = 500, 2_000, 250
        main()
        bench.table("The answer desk", ROWS, note="one uvicorn worker, the memory store")
        sys.exit(bench.finish())

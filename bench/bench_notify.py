"""Benchmark of the notifier: what fan-out costs create(), and webhooks per second.

Cases and targets:
    * fan-out: mean create() time on the memory store with a notifier following it and
      three surfaces, against no notifier; the delivery is off the answer's path, so the
      difference is what following the feed costs; target <= 1 ms added.
    * webhooks: one notifier on the memory store posting signed webhooks (Standard
      Webhooks) to a loopback receiver in a child process that checks every signature;
      deliveries per second from the notifier's start until all are marked done; target
      >= 1,000/s.

Run ``python bench/bench_notify.py``; it prints figures and exits 0 (no assertions).
"""

from __future__ import annotations

import asyncio
import base64
import os
import statistics
import sys
import time
from collections.abc import Mapping
from typing import Any

from roomkit.notify import Notice, Notifier, Person, Webhook
from roomkit.tools.human_input import HumanInputHandler

CREATES = 5_000
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "32"))
WEBHOOKS = int(os.environ.get("BENCH_WEBHOOKS", "5000"))
SECRET = "whsec_" + base64.b64encode(b"bench-notify-secret-0123").decode()


class Null:
    """A surface that reaches everyone and sends nowhere."""

    def __init__(self, name: str) -> None:
        self.name = name

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        return True

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        return None

    async def aclose(self) -> None:
        return None


async def mean_create(handler: HumanInputHandler) -> float:
    times = []
    for n in range(CREATES):
        start = time.perf_counter()
        await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")
        times.append(time.perf_counter() - start)
        if n % 64 == 0:
            await asyncio.sleep(0)  # let the notifier run, as it would between turns
    return statistics.mean(times)


async def fan_out() -> None:
    alone = await mean_create(HumanInputHandler(retention=0))
    handler = HumanInputHandler(retention=0)
    async with Notifier(handler, [Null("a"), Null("b"), Null("c")]) as notifier:
        followed = await mean_create(handler)
        await notifier.wait_idle()
    delivered = sum(notifier.statistics().delivered.values())
    print(
        f"fan-out to 3 surfaces: create() {alone * 1e6:.1f} us alone, {followed * 1e6:.1f} us "
        f"with the notifier (+{(followed - alone) * 1e3:.3f} ms; target <= 1 ms); "
        f"{delivered} notices delivered"
    )


RECEIVER = """
import asyncio, sys
from standardwebhooks import Webhook
verify = Webhook(sys.argv[1]).verify
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            headers = {}
            for line in head.decode("latin-1").split("\\r\\n")[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            verify(body, headers)
            writer.write(b"HTTP/1.1 204 No Content\\r\\ncontent-length: 0\\r\\n\\r\\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


async def webhooks() -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RECEIVER, SECRET, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        port = int(await child.stdout.readline())
        handler = HumanInputHandler(retention=WEBHOOKS)
        for n in range(WEBHOOKS):
            await handler.create("ask", {"question": f"#{n}"}, actor_id="alice")
        webhook = Webhook(f"http://127.0.0.1:{port}/hooks", SECRET)
        cpu = os.times()
        start = time.perf_counter()
        async with Notifier(handler, [webhook], concurrency=CONCURRENCY) as notifier:
            await notifier.wait_idle()
        took = time.perf_counter() - start
        used = os.times()
        stats = notifier.statistics()
        print(
            f"webhooks: {stats.delivered['webhook']} delivered in {took:.2f} s = "
            f"{stats.delivered['webhook'] / took:,.0f}/s (target >= 1,000/s); "
            f"{stats.failed['webhook']} failed attempts; notifier CPU "
            f"{(used.user - cpu.user) + (used.system - cpu.system):.2f} s"
        )
    finally:
        child.terminate()
        await child.wait()


async def main() -> None:
    await fan_out()
    await webhooks()


if __name__ == "__main__":
    asyncio.run(main())

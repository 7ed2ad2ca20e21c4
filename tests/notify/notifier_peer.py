"""A notifier in a process of its own, for the tests that kill one or run two.

    python notifier_peer.py STORE_URL PREFIX WEBHOOK_URL SECRET LEASE

runs ``Notifier(handler, [Webhook(WEBHOOK_URL, SECRET)], lease=LEASE)`` on the store at
STORE_URL (``sqlite:///path``, ``redis://...``, ``postgresql://...``), prints ``ready`` once it
follows the store, and delivers until SIGTERM (or SIGKILL). The tests run ``main`` in a
process forked from one that imported this module (:mod:`tests.forked_processes`).
"""

from __future__ import annotations

import asyncio
import signal
import sys

from tests.tools.human_input.durable.store_fixtures import open_store

from roomkit.notify import Notifier, Retry, Webhook
from roomkit.tools.human_input import HumanInputHandler


async def main(url: str, prefix: str, webhook: str, secret: str, lease: str) -> None:
    store = open_store(url, prefix)
    handler = HumanInputHandler(store=store)  # type: ignore[arg-type]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    surface = Webhook(webhook, secret, retry=Retry(first=0.05, cap=0.2), timeout=60)
    async with Notifier(handler, [surface], lease=float(lease), poll=0.1):
        print("ready", flush=True)
        await stop.wait()
    await store.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))

"""A notifier pushing to phones in a process of its own, for the tests that kill it.

    main(STORE_URL, PREFIX, LEASE, "webpush", DATA_DIR, PUSH_ORIGIN)
    main(STORE_URL, PREFIX, LEASE, "ntfy", SERVER_URL)

runs ``Notifier(handler, [surface], lease=LEASE)`` on the store at STORE_URL, the surface
pushing to the subscriptions in DATA_DIR on the push service at PUSH_ORIGIN, or publishing
to the ntfy server at SERVER_URL; prints ``ready`` once it follows the store, and delivers
until SIGTERM (or SIGKILL). The tests run ``main`` in a process forked from one that
imported this module (:mod:`tests.forked_processes`).
"""

from __future__ import annotations

import asyncio
import signal
import sys

from tests.servers.stores import open_store

from roomkit.notify import Notifier, Ntfy
from roomkit.notify.surface import Surface
from roomkit.notify.webpush import WebPush
from roomkit.tools.human_input import HumanInputHandler

SUBJECT = "mailto:ops@example.com"
DESK = "https://desk.example.com"
SECRET = "the tests' desk secret, 0123456789abcdef"
TOPIC = "approvals-{actor}-k3v9q"


def surface_of(kind: str, where: list[str]) -> Surface:
    if kind == "ntfy":
        return Ntfy(where[0], TOPIC)
    data_dir, origin = where
    return WebPush(SUBJECT, data_dir=data_dir, push_hosts=[origin])


async def main(url: str, prefix: str, lease: str, kind: str, *where: str) -> None:
    surface = surface_of(kind, list(where))
    store = open_store(url, prefix)
    handler = HumanInputHandler(store=store)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    notifier = Notifier(
        handler, [surface], desk_url=DESK, link_secret=SECRET, lease=float(lease), poll=0.1
    )
    async with notifier:
        print("ready", flush=True)
        await stop.wait()
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))

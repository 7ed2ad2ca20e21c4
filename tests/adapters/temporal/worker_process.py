"""A worker in a process of its own, for the tests that kill one: ``python -m
tests.adapters.temporal.worker_process ADDRESS STORE_URL SCHEMA TASK_QUEUE``.

It prints ``ready`` once polling, and runs until killed. It caches no workflow, so a
workflow it held goes to the next worker at once, not after the sticky queue's timeout.
"""

from __future__ import annotations

import asyncio
import sys

from temporalio.client import Client
from temporalio.worker import Worker
from tests.adapters.temporal.workflows import Approve, Ask, AskTwice
from tests.servers.stores import open_store

from roomkit.adapters.temporal import activities
from roomkit.tools.human_input import HumanInputHandler


async def main(address: str, store_url: str, schema: str, task_queue: str) -> None:
    client = await Client.connect(address)
    handler = HumanInputHandler(store=open_store(store_url, schema))
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[Ask, AskTwice, Approve],
        activities=activities(handler),
        max_cached_workflows=0,
    )
    async with worker:
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

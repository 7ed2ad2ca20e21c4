"""What the approval state machines share: two handlers on one store, and their teardown.

Two handlers share one store (an agent and a desk; on SQLite, Redis and PostgreSQL each has
its own store object, as separate processes would). On PostgreSQL the examples of a run take
one schema in turn, emptied before each (:mod:`tests.servers.schemas`). Each step runs on
the machine's own event loop, bounded so that a hang fails the step instead of the run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from hypothesis.stateful import RuleBasedStateMachine
from tests.servers.schemas import emptied

from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail

T = TypeVar("T")

HANDLERS = ("agent", "desk")


class StoreMachine(RuleBasedStateMachine):
    """A state machine over two handlers on a store of ``kind`` (at ``url``); on PostgreSQL,
    in ``schema``, which the examples of a run take in turn (emptied before each)."""

    def __init__(self, kind: str, url: str = "", schema: str = "") -> None:
        super().__init__()
        self.kind = kind
        self.schema = schema
        self.loop = asyncio.new_event_loop()
        self.workdir = Path(tempfile.mkdtemp(prefix="roomkit-approvals-"))
        self.stores: list[Any] = []
        self.handlers: dict[str, HumanInputHandler] = {}
        self.trails: dict[str, ShownTrail] = {}
        try:
            self.run(self.open_handlers(url))
        except BaseException:
            self.shut()
            raise

    def run(self, step: Awaitable[T]) -> T:
        async def bounded() -> T:
            async with asyncio.timeout(20):
                return await step

        return self.loop.run_until_complete(bounded())

    async def open_handlers(self, url: str) -> None:
        if self.kind == "memory":
            shared = HumanInputHandler()
            self.handlers = dict.fromkeys(HANDLERS, shared)
            self.trails = {name: ShownTrail(shared) for name in HANDLERS}
            return
        prefix = f"ap{os.urandom(6).hex()}"
        if self.kind == "postgres":
            prefix = await emptied(url, self.schema)
        for name in HANDLERS:
            store: Any
            if self.kind == "sqlite":
                from roomkit.stores.sqlite import SQLiteStore

                store = SQLiteStore(self.workdir / "pending.db")
            elif self.kind == "postgres":
                from roomkit.stores.postgres import PostgresStore

                store = PostgresStore(url, schema=prefix)
            else:
                from roomkit.stores.redis import RedisStore

                store = RedisStore(url, prefix=prefix)
            await store.open()
            self.stores.append(store)
            self.handlers[name] = HumanInputHandler(store=store)
            self.trails[name] = ShownTrail(self.handlers[name])

    def shut(self) -> None:
        async def close() -> None:
            for store in self.stores:
                await store.close()

        try:
            self.loop.run_until_complete(close())
        finally:
            self.loop.close()
            shutil.rmtree(self.workdir, ignore_errors=True)

    def teardown(self) -> None:
        self.shut()

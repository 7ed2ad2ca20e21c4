"""Grants on every store: two "processes" sharing one store and a clock the test moves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from tests.grants.support import Clock
from tests.servers.stores import StoreSite

from roomkit.stores.grants import GrantStore, MemoryGrants
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture
def clock() -> Clock:
    return Clock()


HandlerMaker = Callable[[], HumanInputHandler]


@pytest.fixture
async def handlers(store_site: StoreSite, clock: Clock) -> AsyncIterator[HandlerMaker]:
    """Handlers on the test's store, each with its own store object (as separate processes
    have), all on the test's clock; on the memory store, one handler."""
    opened: list[Any] = []
    memory = HumanInputHandler()
    memory.grants = MemoryGrants(clock=clock)

    def make() -> HumanInputHandler:
        if not store_site.durable:
            return memory
        store = store_site.open(clock=clock)  # type: ignore[arg-type]
        opened.append(store)
        return HumanInputHandler(store=store)

    yield make
    for store in opened:
        await store.close()


@pytest.fixture
def grant_stores(handlers: HandlerMaker) -> Callable[[], GrantStore]:
    """The grants of a new process on the test's store."""
    return lambda: handlers().grants

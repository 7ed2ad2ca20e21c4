"""What ``roomkit audit verify`` and ``export`` hold in memory: a page of chains and a few
small things per request, never every entry of the store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tracemalloc
from pathlib import Path

import pytest
from tests.tools.human_input.stores.trail_places import KEY, KEYS
from tests.traced_memory import tracing

from roomkit import HumanInputHandler
from roomkit.cli import main
from roomkit.stores import AUDIT_KEY_ENV
from roomkit.stores.sqlite import SQLiteStore

LONG = 4_000
"""Characters of each question and answer of the store the memory test fills."""


async def _fill_long(path: Path, count: int) -> None:
    """``count`` questions asked and answered on a SQLite store at ``path``, each question
    and answer :data:`LONG` characters, the heads signed and a checkpoint taken."""
    async with SQLiteStore(path) as store:
        store.trail.use_keys(KEYS)
        handler = HumanInputHandler(store=store)

        async def one(n: int) -> None:
            asked = await handler.create("Ask", {"question": f"{n}" + "q" * LONG})
            assert await handler.aresolve(asked.pending_id, "a" * LONG, by="bob")

        for first in range(0, count, 100):
            await asyncio.gather(*(one(n) for n in range(first, min(count, first + 100))))
        assert (await store.trail.checkpoint()).checkpoint is not None


def _peak(argv: list[str]) -> int:
    """The most memory ``roomkit`` run with ``argv`` held at once, its output discarded."""
    with open(os.devnull, "w") as discard, contextlib.redirect_stdout(discard), tracing():
        tracemalloc.reset_peak()
        assert main(argv) == 0
        return tracemalloc.get_traced_memory()[1]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The URLs of a store of 500 such requests and of one of 5,000."""
    where = tmp_path_factory.mktemp("audit-memory")
    small, large = where / "small.db", where / "large.db"
    asyncio.run(_fill_long(small, 500))
    asyncio.run(_fill_long(large, 5_000))
    return f"sqlite:///{small}", f"sqlite:///{large}"


@pytest.mark.parametrize("action", ["verify", "export"])
def test_verify_and_export_hold_a_page_of_chains_not_the_trail(
    action: str, stores: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """5,000 requests of 8 kB each take little more memory to check and export than 500:
    what grows is each request's id and what the checkpoint lists of it, not its text."""
    monkeypatch.setenv(AUDIT_KEY_ENV, KEY)
    small, large = stores
    argv = ["audit", action, "--store"]
    _peak([*argv, small])  # the modules the command imports, imported
    grown = _peak([*argv, large]) - _peak([*argv, small])
    # The 4,500 requests added hold more than 8 kB of text each; a whole read holds it all.
    assert grown < 4_500 * 1_500, f"{grown / 4_500:.0f} bytes more per request"

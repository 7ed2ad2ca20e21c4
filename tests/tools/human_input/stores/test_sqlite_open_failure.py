"""A SQLite store whose file cannot be opened fails cleanly, leaving no thread behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.tools.human_input.stores.store_kit import connection_threads, still_running

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.sqlite import SQLiteStore


def test_a_file_that_cannot_be_opened_leaves_no_worker_thread(tmp_path: Path) -> None:
    """Each attempt runs on a loop of its own, closed at once, as a command's would be: a
    worker thread left behind would report to a closed loop (an error in that thread)."""

    async def attempt() -> None:
        before = connection_threads()
        store = SQLiteStore(tmp_path / "no-such-folder" / "kit.db")
        with pytest.raises(StoreUnavailableError, match="no-such-folder"):
            await store.open()
        assert not still_running(before)
        await store.close()

    for _ in range(20):
        asyncio.run(attempt())

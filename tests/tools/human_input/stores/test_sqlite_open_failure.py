"""A SQLite store whose file cannot be opened fails cleanly, leaving no thread behind."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.stores.sqlite import SQLiteStore


def worker_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if "connection_worker" in thread.name}


def test_a_file_that_cannot_be_opened_leaves_no_worker_thread(tmp_path: Path) -> None:
    """Each attempt runs on a loop of its own, closed at once, as a command's would be: a
    worker thread left behind would report to a closed loop (an error in that thread)."""

    async def attempt() -> None:
        before = worker_threads()
        store = SQLiteStore(tmp_path / "no-such-folder" / "kit.db")
        with pytest.raises(StoreUnavailableError, match="no-such-folder"):
            await store.open()
        assert worker_threads() <= before
        await store.close()

    for _ in range(20):
        asyncio.run(attempt())

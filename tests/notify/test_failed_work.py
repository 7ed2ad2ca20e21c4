"""An item whose work fails for a reason other than an outage of the store is tried again
after a short back-off, not when its lease lapses."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from contextlib import closing
from pathlib import Path

from tests.notify.recorder import Recorder
from tests.notify.test_store_outage import notifier_log
from tests.tools.human_input.stores.store_kit import PATIENCE

from roomkit.notify import Notifier
from roomkit.stores.outbox import OutboxItem, now_of, step_id
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler


class Failed(logging.Handler):
    """Keeps the notifier's errors, and sets an event at the first of an announcement."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        if ".announce" in message and "failed" in message:
            self.seen.set()


def set_status(path: Path, pending_id: str, status: str) -> str:
    """Write ``status`` into the request's row as another program would; the one it had."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        (before,) = db.execute(
            "SELECT status FROM roomkit_pending WHERE pending_id = ?", (pending_id,)
        ).fetchone()
        db.execute(
            "UPDATE roomkit_pending SET status = ? WHERE pending_id = ?", (status, pending_id)
        )
    return str(before)


async def test_an_announcement_that_failed_once_goes_out_before_its_lease_ends(
    tmp_path: Path,
) -> None:
    """The request's row cannot be read when its announcement is worked out (written by
    something else than roomkit); once it is put right, the announcement goes out a poll or
    two later, not when the 600 s lease lapses."""
    path = tmp_path / "pending.db"
    failed, recorder = Failed(), Recorder()
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("ask", {"question": "Ready?"}, actor_id="alice")
        # Its announcement is owed, as a notifier that heard of it but stopped left it.
        now = now_of(handler)
        step = step_id(request.pending_id, "announce")
        await handler.outbox.add(
            [OutboxItem(step, request.pending_id, now, {"job": "announce"}, created=now)]
        )
        status = set_status(path, request.pending_id, "lost")
        with notifier_log(failed):
            async with Notifier(handler, [recorder], lease=600, poll=0.05) as notifier:
                async with asyncio.timeout(PATIENCE):
                    await failed.seen.wait()
                set_status(path, request.pending_id, status)
                async with asyncio.timeout(PATIENCE):
                    await recorder.wait_until(lambda seen: len(seen) == 1)
                    await notifier.wait_idle()
        assert recorder.seen() == [("question_pending", "alice")]
        assert f"notifier: {step} failed; trying it again in 0.05s" in failed.messages
        await handler.close()

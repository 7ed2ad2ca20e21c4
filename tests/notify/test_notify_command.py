"""``roomkit notify`` as a process of its own: it tells a webhook about a request on a SQLite
store, with the file's ladder, and leaves cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from tests.notify.receiver import Receiver, body_types

from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

ROOT = Path(__file__).resolve().parents[2]


async def test_roomkit_notify_delivers_from_its_file_and_stops_on_sigterm(tmp_path: Path) -> None:
    database = tmp_path / "desk.db"
    config = tmp_path / "notify.toml"
    async with Receiver() as receiver:
        config.write_text(
            'desk_url = "http://127.0.0.1:8765"\n'
            f'[[webhook]]\nurl = "{receiver.url}"\nsecret_env = "HOOK_SECRET"\n'
            "[ladder]\nremind_after = 0.2\n",
            encoding="utf-8",
        )
        store = SQLiteStore(str(database), backstop_interval=0.05)
        handler = HumanInputHandler(store=store)
        request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "roomkit.cli", "notify",
            "--store", f"sqlite:///{database}", "--config", str(config),
            "--data-dir", str(tmp_path),
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOOK_SECRET": receiver.secret, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            assert process.stdout is not None
            line = await process.stdout.readline()
            assert line == b"Notifying through webhook; Ctrl-C or SIGTERM stops\n"
            # The announcement, then the file's reminder: both signed, both verified.
            delivered = await receiver.wait_for(2)
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = await process.communicate()
            await store.close()
    assert process.returncode == 0, err
    assert err == b"Stopped: what is owed stays in the store's outbox\n"
    assert body_types(delivered) == ["question_pending", "question_reminder"]
    assert {body["pending_id"] for _, body in delivered} == {request.pending_id}
    announced = delivered[0][1]
    assert announced["desk_url"] == "http://127.0.0.1:8765"
    assert announced["answer_urls"]["alice"].startswith("http://127.0.0.1:8765/")
    assert receiver.refused == 0

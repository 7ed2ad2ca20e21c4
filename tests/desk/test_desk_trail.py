"""``roomkit desk`` and ``roomkit notify`` with the audit key in their data folder: they sign
the heads they append and write a checkpoint of the trail as they stop, which ``roomkit
audit verify`` checks with the same key."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from tests.notify.receiver import Receiver

from roomkit.cli import main
from roomkit.stores import load_audit_keys
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_AUDIT_KEY", "ROOMKIT_DESK_SECRET", "ROOMKIT_TOKEN", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the command in a thread (it blocks on HTTP while the loop serves the desk)."""
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_the_desk_signs_what_it_settles_and_checkpoints_as_it_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    assert (await run(capsys, "audit", "key", "--data-dir", data))[0] == 0
    database = tmp_path / "desk.db"
    url = f"sqlite:///{database}"
    store = SQLiteStore(database, backstop_interval=0.02)
    store.trail.use_keys(load_audit_keys(data))  # the agent signs what it appends too
    agent = HumanInputHandler(store=store)
    asked = await agent.create("AskUserQuestion", {"question": "Where?"}, actor_id="alice")
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--data-dir", data,
        "--store", url,
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert desk.stdout is not None
        line = (await desk.stdout.readline()).decode()
        found = re.match(r"Open (http://\S+)/#token=", line)
        assert found, line
        _, alice, _ = await run(capsys, "token", "alice", "--data-dir", data)
        answered = await run(
            capsys, "pending", "answer", asked.pending_id, "Lisbon", "--url", found.group(1),
            "--token", alice.strip(),
        )  # fmt: skip
        assert answered[0] == 0
        assert await agent.wait(asked.pending_id, timeout=30) == "Lisbon"
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
        await store.close()
    assert desk.returncode == 0
    code, out, err = await run(capsys, "audit", "verify", "--store", url, "--data-dir", data)
    assert (code, err) == (0, "")
    assert "1 request history" in out
    assert "1 checkpoint holds" in out
    assert "0 histories written since" in out


async def test_the_notifier_signs_what_it_shows_and_checkpoints_as_it_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert (await run(capsys, "audit", "key", "--data-dir", str(data)))[0] == 0
    database = tmp_path / "desk.db"
    config = tmp_path / "notify.toml"
    async with Receiver() as receiver:
        config.write_text(
            f'[[webhook]]\nurl = "{receiver.url}"\nsecret_env = "HOOK_SECRET"\n',
            encoding="utf-8",
        )
        # The agent holds no key: the notifier's signed head vouches for what came before.
        async with SQLiteStore(database, backstop_interval=0.05) as store:
            await HumanInputHandler(store=store).create("ask", {"question": "Ship it?"})
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "roomkit.cli", "notify",
            "--store", f"sqlite:///{database}", "--config", str(config),
            "--data-dir", str(data),
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOOK_SECRET": receiver.secret, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            await receiver.wait_for(1)
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = await process.communicate()
    assert process.returncode == 0, err
    code, out, problems = await run(
        capsys, "audit", "verify", "--store", f"sqlite:///{database}", "--data-dir", str(data)
    )
    assert (code, problems) == (0, "")
    assert "1 request history, 2 entries" in out
    assert "1 checkpoint holds" in out, err

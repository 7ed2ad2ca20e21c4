"""``roomkit desk --notify notify.toml`` with a ``[slack]`` table turns Slack on end to end:
the desk's notifier posts the question to Slack (the fake Web API on loopback), a signed
click on its button comes back to the desk and settles the request as the person the file's
directory names, and the Slack message is updated to say who answered."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import httpx
from test_desk_slack import PATH, Click, signed
from tests.notify.slack_api import SIGNING_SECRET, TOKEN, SlackAPI, free_port

from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler

ROOT = Path(__file__).resolve().parents[2]


async def test_desk_notify_answers_a_question_from_slack(
    tmp_path: Path, slack_api: SlackAPI
) -> None:
    database, port = tmp_path / "desk.db", free_port()
    config = tmp_path / "notify.toml"
    config.write_text(
        f'desk_url = "http://127.0.0.1:{port}"\n'
        "[slack]\n"
        'token_env = "SLACK_BOT_TOKEN"\nsigning_secret_env = "SLACK_SIGNING_SECRET"\n'
        f'api_url = "{slack_api.base_url}"\n'
        '[people.alice]\nslack_user = "U0ALICE"\n',
        encoding="utf-8",
    )
    environment = {
        **os.environ,
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PYTHONUNBUFFERED": "1",
    }
    environment.pop("ROOMKIT_DESK_SECRET", None)
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", str(port),
        "--store", f"sqlite:///{database}", "--notify", str(config),
        "--data-dir", str(tmp_path), "--log-level", "warning",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, env=environment,
    )  # fmt: skip
    store = SQLiteStore(str(database), backstop_interval=0.05)
    handler = HumanInputHandler(store=store)
    try:
        assert desk.stdout is not None
        line = (await desk.stdout.readline()).decode()
        assert re.match(rf"Open http://127\.0\.0\.1:{port}/#token=", line), line
        arguments = {"question": "Window or aisle?", "options": ["Window", "Aisle"]}
        request = await handler.create("AskUserQuestion", arguments, actor_id="alice")
        await slack_api.wait_until(lambda: bool(slack_api.posted()))
        [message] = slack_api.posted()
        assert message["channel"] == "DU0ALICE"
        click = Click(slack_api, message, "Aisle")
        body = click.body("U0ALICE")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            answered = await client.post(PATH, content=body, headers=signed(body))
        assert answered.status_code == 200, answered.text
        assert await handler.wait(request.pending_id) == "Aisle"
        [kept] = slack_api.messages.values()
        await slack_api.wait_until(lambda: kept.updates >= 1)
    finally:
        await store.close()
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
    settled = await _settled(database, request.pending_id)
    assert (settled.result, settled.settled_by) == ("Aisle", "alice")
    assert kept.text == "Answered by alice in Slack"
    assert not any(block["type"] == "actions" for block in kept.blocks)
    assert desk.returncode == 0


async def _settled(database: Path, pending_id: str) -> object:
    store = SQLiteStore(str(database))
    try:
        request = await HumanInputHandler(store=store).get_request(pending_id)
    finally:
        await store.close()
    assert request is not None
    return request

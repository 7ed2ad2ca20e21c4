"""The first tutorial's terminal commands (docs/tutorials/first-question.md) work as written
against a running demo.

The demo runs as ``make demo`` runs it: from a checkout-like folder holding ``.venv``, with
its default data folder ``.demo-data``. The tutorial's block of ``roomkit`` commands runs in
bash in that folder, with ``ID`` standing for the question the agent asked; the only thing
the test adds is ``ROOMKIT_DESK_URL``, since the demo listens on a free port here.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.doc_pages import section
from websockets.asyncio.client import ClientConnection, connect

ROOT = Path(__file__).resolve().parents[2]
STEP = 30.0


def readme_terminal_block() -> str:
    """The shell block of the first tutorial's "Try the answer desk" section."""
    text = section("docs/tutorials/first-question.md", "## Try the answer desk")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    found = [block for block in blocks if "roomkit pending" in block]
    assert len(found) == 1, "the section has one block of roomkit commands"
    return found[0]


def commands(block: str) -> list[str]:
    """The block's commands, without their comments."""
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder laid out as a checkout after ``make demo``: ``.venv`` is this environment."""
    if not (Path(sys.prefix) / "bin" / "roomkit").exists():
        pytest.fail(
            "the roomkit command is not installed in this environment: "
            "run the tests from the project's .venv (make test)",
            pytrace=False,
        )
    (tmp_path / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    return tmp_path


async def test_the_readme_commands_answer_the_demo_as_written(checkout: Path) -> None:
    block = readme_terminal_block()
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("ROOMKIT_") and name not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    demo = await asyncio.create_subprocess_exec(
        str(checkout / ".venv" / "bin" / "python"), "-m", "roomkit.desk.demo", "--port", "0",
        cwd=checkout, env=environ, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert demo.stdout is not None
        async with asyncio.timeout(STEP):
            printed = [(await demo.stdout.readline()).decode() for _ in range(7)]
        link = printed[0].removeprefix("Open ").strip()
        url, _, fragment = link.partition("/#token=")
        token = fragment.partition("&room=")[0]
        url_export, *shown = [line.strip() for line in printed[3:]]
        assert url_export == f"export ROOMKIT_DESK_URL={url}"
        assert shown == commands(block)[:3], "the demo prints the README's commands"

        async with connect(url.replace("http://", "ws://") + "/api/ws", origin=url) as ws:
            await ws.send(json.dumps({"type": "auth", "token": token}))
            async with httpx.AsyncClient(base_url=url) as client:
                said = await client.post(
                    "/api/rooms/demo/messages",
                    json={"text": "Plan a trip"},
                    headers={"Authorization": f"Bearer {token}"},
                )
            assert said.status_code == 202
            asked = await next_question(ws)
            pending_id = asked["id"]
            script = "set -e\n" + block.replace("ID", pending_id)
            shell = await asyncio.create_subprocess_exec(
                "bash", "-c", script, cwd=checkout,
                env={**environ, "ROOMKIT_DESK_URL": url},
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            async with asyncio.timeout(STEP):
                out, err = await shell.communicate()
            following = await next_question(ws)
    finally:
        demo.terminate()
        await demo.communicate()
    output = out.decode()
    assert (shell.returncode, err.decode()) == (0, "")
    assert pending_id in output.splitlines()[0]
    assert "What kind of trip are you planning?" in output
    assert "  1) City break" in output
    assert output.strip().endswith(f"Answered {pending_id}")
    assert following["arguments"]["question"] == "City break it is. Where would you like to go?"


async def next_question(ws: ClientConnection) -> dict[str, Any]:
    """The next question the desk announces on the WebSocket (the snapshot counts)."""
    while True:
        async with asyncio.timeout(STEP):
            frame = json.loads(await ws.recv())
        requests = frame.get("requests") or ([frame["request"]] if "request" in frame else [])
        pending = [r for r in requests if r.get("status", "pending") == "pending"]
        if frame["type"] in ("snapshot", "question_pending") and pending:
            return dict(pending[-1])

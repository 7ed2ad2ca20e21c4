"""``python -m roomkit.desk.demo`` survives being killed while a question is open.

Each test runs the real demo as a subprocess on a data folder of its own, talks to it as the
page does (HTTP and the WebSocket), stops it mid-plan (SIGKILL, or Ctrl-C) and starts it
again: the open question is still listed, answering it carries the same conversation on, and
the person is asked each question once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

STARTUP = 30.0
STEP = 20.0


@dataclass
class Running:
    """A demo process and how to reach it."""

    process: asyncio.subprocess.Process
    url: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@asynccontextmanager
async def demo(data_dir: Path) -> AsyncIterator[Running]:
    """Start the demo on ``data_dir`` (any free port); stops it at the end if still running."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roomkit.desk.demo",
        "--data-dir",
        str(data_dir),
        env={**os.environ, "PORT": "0", "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(STARTUP):
            line = (await process.stdout.readline()).decode()
        assert line.startswith("Open http://127.0.0.1:"), line
        url, _, fragment = line.removeprefix("Open ").strip().partition("/#token=")
        token, _, room = fragment.partition("&room=")
        assert room == "demo"
        yield Running(process, url, token)
    finally:
        if process.returncode is None:
            process.kill()
        await process.communicate()


@asynccontextmanager
async def live(running: Running) -> AsyncIterator[tuple[ClientConnection, list[dict[str, Any]]]]:
    """The page's WebSocket: authenticated, with its snapshot."""
    ws_url = running.url.replace("http://", "ws://") + "/api/ws"
    async with connect(ws_url, origin=running.url) as ws:  # type: ignore[arg-type]
        await ws.send(json.dumps({"type": "auth", "token": running.token}))
        async with asyncio.timeout(STEP):
            snapshot = json.loads(await ws.recv())
        assert snapshot["type"] == "snapshot"
        yield ws, snapshot["requests"]


async def next_frame(ws: ClientConnection, kind: str, seen: list[dict[str, Any]]) -> dict[str, Any]:
    """The next frame of ``kind``; every frame read on the way is kept in ``seen``."""
    async with asyncio.timeout(STEP):
        while True:
            frame: dict[str, Any] = json.loads(await ws.recv())
            seen.append(frame)
            if frame["type"] == kind:
                return frame


def answer_for(view: dict[str, Any]) -> dict[str, Any]:
    """What the person answers to each of the planner's questions."""
    arguments = view["arguments"]
    if view["kind"] == "approval":
        return {"decision": "approve"}
    if view["kind"] == "questions":
        answers = [
            {"question": item["question"], "answer": item["options"][0]["label"]}
            for item in arguments["questions"]
        ]
        return {"answers": answers}
    if arguments.get("multiSelect"):
        return {"answer": arguments["options"][:2]}
    if "options" in arguments:
        return {"answer": arguments["options"][1]}
    return {"answer": "Reykjavik"}


async def answer(running: Running, view: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=running.url, headers=running.headers) as api:
        response = await api.post(f"/api/requests/{view['id']}/answer", json=answer_for(view))
    assert response.status_code == 200, response.text


async def answer_until_reply(
    running: Running, ws: ClientConnection, first: dict[str, Any], asked: list[str]
) -> dict[str, Any]:
    """Answer ``first`` and every question after it; the agent's reply when it comes."""
    view = first
    async with asyncio.timeout(STEP * 5):
        while True:
            await answer(running, view)
            while True:
                frame = json.loads(await ws.recv())
                if frame["type"] == "question_pending":
                    view = frame["request"]
                    asked.append(view["id"])
                    break
                if frame["type"] == "room_message" and frame["message"]["sender_id"] == "agent":
                    return dict(frame["message"])


@pytest.mark.parametrize(
    ("stops", "answered_before"),
    [
        ([signal.SIGKILL], 0),
        ([signal.SIGKILL], 4),
        ([signal.SIGINT], 2),
        ([signal.SIGKILL, signal.SIGINT], 3),
    ],
    ids=[
        "sigkill-at-the-first-question",
        "sigkill-at-the-booking-approval",
        "ctrl-c-mid-plan",
        "sigkill-then-ctrl-c-while-resumed",
    ],
)
async def test_an_open_question_outlives_the_process(
    tmp_path: Path, stops: list[signal.Signals], answered_before: int
) -> None:
    asked: list[str] = []
    seen: list[dict[str, Any]] = []
    async with demo(tmp_path) as first, live(first) as (ws, snapshot):
        assert snapshot == []
        async with httpx.AsyncClient(base_url=first.url, headers=first.headers) as api:
            posted = await api.post("/api/rooms/demo/messages", json={"text": "Plan my trip"})
        assert posted.status_code == 202
        view = (await next_frame(ws, "question_pending", seen))["request"]
        asked.append(view["id"])
        for _ in range(answered_before):
            await answer(first, view)
            view = (await next_frame(ws, "question_pending", seen))["request"]
            asked.append(view["id"])
        os.kill(first.process.pid, stops[0])
        await first.process.wait()
    open_question = view

    for stop in stops[1:]:
        async with demo(tmp_path) as again, live(again) as (ws, snapshot):
            assert [request["id"] for request in snapshot] == [open_question["id"]]
            os.kill(again.process.pid, stop)
            await again.process.wait()

    async with demo(tmp_path) as last, live(last) as (ws, snapshot):
        assert [request["id"] for request in snapshot] == [open_question["id"]]
        assert snapshot[0]["arguments"] == open_question["arguments"]
        assert snapshot[0]["status"] == "pending"
        reply = await answer_until_reply(last, ws, snapshot[0], asked)
        async with httpx.AsyncClient(base_url=last.url, headers=last.headers) as api:
            history = (await api.get("/api/rooms/demo/messages")).json()["messages"]
            still_open = (await api.get("/api/requests")).json()["requests"]
        last.process.send_signal(signal.SIGINT)
        assert await last.process.wait() == 0

    assert reply["body"].startswith("Booked: a ")
    assert [(m["sender_id"], m["body"]) for m in history] == [
        ("demo-user", "Plan my trip"),
        ("agent", reply["body"]),
    ]
    assert len(asked) == 5
    assert len(set(asked)) == 5
    assert still_open == []


async def test_the_demo_prints_its_link_and_commands_and_keeps_its_key(tmp_path: Path) -> None:
    async with demo(tmp_path) as running:
        async with httpx.AsyncClient(base_url=running.url, headers=running.headers) as api:
            me = (await api.get("/api/me")).json()
            page = await api.get("/")
        running.process.send_signal(signal.SIGINT)
        out, err = await running.process.communicate()
    assert me == {"actor_id": "demo-user", "admin": False}
    assert "Answer desk" in page.text
    commands = out.decode()
    assert commands.startswith("\nOr answer from a terminal, in another shell in this folder:\n")
    assert f"token demo-user --data-dir {tmp_path})" in commands
    assert err == b""
    assert (tmp_path / "desk.key").stat().st_mode & 0o077 == 0
    assert (tmp_path / "demo.db").exists()

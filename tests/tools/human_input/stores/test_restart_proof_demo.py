"""The restart-proof example beside ``roomkit desk``: two OS processes on one store.

As the README tells a user to: start the desk and the agent on SQLite (or Redis), see the
agent's question on the desk over HTTP, ``kill -9`` the agent while it waits, start it
again, answer through the desk, and see the same turn finish with that answer, on the same
question. Every step waits on a line the process prints, never on a timer.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis
from tests.tools.human_input.stores.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[4]
AGENT = ROOT / "examples" / "restart_proof_agent.py"
STEP = 30.0
"""Seconds one step may take at most before the test fails (a bound, not a wait)."""
REDIS_DB = 9
"""A database of the session's server that only this test uses (the example's prefix is the
default one)."""


class Process:
    """A child process whose stdout lines are read as they come and kept."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    async def line(self, starting: str) -> str:
        """The next line that starts with ``starting``; fails if the process ends first."""
        assert self.process.stdout is not None
        async with asyncio.timeout(STEP):
            while raw := await self.process.stdout.readline():
                text = raw.decode().rstrip("\n")
                self.lines.append(text)
                if text.startswith(starting):
                    return text
        raise AssertionError(f"the process ended before printing {starting!r}: {self.lines}")


@pytest.fixture(params=["sqlite", "redis"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'kit.db'}"
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    url = re.sub(r"/\d+$", f"/{REDIS_DB}", server.url)
    client = Redis.from_url(url)
    await client.flushdb()
    yield url
    await client.flushdb()
    await client.aclose()


@pytest.fixture
async def spawn(tmp_path: Path) -> AsyncIterator[list[Process]]:
    """Where a test puts the processes it starts; every one still running is killed after."""
    started: list[Process] = []
    yield started
    for child in started:
        if child.process.returncode is None:
            child.process.kill()
        await child.process.wait()


async def start(spawned: list[Process], cwd: Path, *arguments: str) -> Process:
    stderr = (cwd / f"stderr-{len(spawned)}.txt").open("wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *arguments,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    stderr.close()
    child = Process(process)
    spawned.append(child)
    return child


async def test_the_agent_killed_mid_wait_resumes_with_the_desk_answer(
    store_url: str, spawn: list[Process], tmp_path: Path
) -> None:
    desk = await start(
        spawn,
        tmp_path,
        *("-m", "roomkit.cli", "desk", "--store", store_url),
        *("--data-dir", str(tmp_path / "desk"), "--port", "0"),
    )
    sign_in = await desk.line("Open ")
    found = re.search(r"(http://[^/]+)/#token=(\S+)", sign_in)
    assert found is not None, sign_in
    base, link = found.groups()
    async with httpx.AsyncClient(base_url=base, timeout=STEP) as client:
        traded = await client.post("/api/sign-in", headers={"Authorization": f"Bearer {link}"})
    assert traded.status_code == 200, traded.text
    token = traded.json()["token"]
    agent = await start(spawn, tmp_path, str(AGENT), store_url)
    asked = await agent.line("asked ")
    asked_id = asked.split()[1]
    # A first start finds nothing left by a run before it: it says so, and resumes nothing.
    assert not any(line.startswith("resuming") for line in agent.lines), agent.lines
    pending_id = asked_id.rstrip(":")

    agent.process.kill()
    await agent.process.wait()
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=STEP
    ) as client:
        listed = (await client.get("/api/requests")).json()["requests"]
        assert [(item["id"], item["status"]) for item in listed] == [(pending_id, "pending")]
        again = await start(spawn, tmp_path, str(AGENT), store_url)
        await again.line("resuming")
        answered = await client.post(f"/api/requests/{pending_id}/answer", json={"answer": "blue"})
        assert answered.status_code == 200, answered.text

    assert await again.line("[agent]") == "[agent] Making the logo with your answer: blue"
    await again.line("done")
    assert await again.process.wait() == 0
    # The same question, never a second one. (Its announcement runs again only when the
    # kill came between the hook and the record that it ran.)
    assert {line.split()[1] for line in again.lines if line.startswith("asked ")} <= {asked_id}
    # Started once more, it finds the conversation over and nothing to resume.
    after = await start(spawn, tmp_path, str(AGENT), store_url)
    await after.line("done")
    assert await after.process.wait() == 0
    assert after.lines == ["nothing to resume: the conversation is over", "done"]

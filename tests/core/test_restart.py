"""A kit killed with SIGKILL while its agent waits on a person finishes the turn on restart."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from asyncio.subprocess import Process
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from roomkit.core.sqlite_store import SQLiteRoomStore
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores.sqlite import SQLiteStore

AGENT = Path(__file__).with_name("restart_agent.py")


@pytest.fixture
async def agents() -> AsyncIterator[Callable[[Path, str], Awaitable[Process]]]:
    """Starts agent processes; any still running at the end is killed."""
    started: list[Process] = []

    async def start(db: Path, mode: str) -> Process:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(AGENT), str(db), mode, stdout=asyncio.subprocess.PIPE, env=env
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _line(process: Process) -> dict[str, object]:
    assert process.stdout is not None
    async with asyncio.timeout(30):
        raw = await process.stdout.readline()
    assert raw, "the agent process ended without a word"
    line: dict[str, object] = json.loads(raw)
    return line


async def test_a_turn_killed_while_waiting_resumes_with_the_answer_given_meanwhile(
    tmp_path: Path, agents: Callable[[Path, str], Awaitable[Process]]
) -> None:
    db = tmp_path / "kit.db"
    first = await agents(db, "ask")
    asked = await _line(first)

    first.send_signal(signal.SIGKILL)
    assert await first.wait() == -signal.SIGKILL

    async with SQLiteStore(db) as store:
        desk = HumanInputHandler(store=store)
        [request] = await desk.list_pending(room_id="trip")
        assert request.pending_id == asked["asked"]
        assert request.actor_id == "ann"
        assert await desk.aresolve(request.pending_id, "Lisbon", by="ann") is True

    second = await agents(db, "resume")
    outcome = await _line(second)
    assert await second.wait() == 0

    # The model was asked once more (for the reply), not for the tool call again.
    assert outcome == {"replies": ["Booked a trip to Lisbon."], "generated": 1}
    async with SQLiteRoomStore(db) as rooms:
        history = [event.content.body for event in await rooms.list_events("trip")]
        assert history == ["Plan my holiday", "Booked a trip to Lisbon."]
        assert await rooms.open_turns() == []
    async with SQLiteStore(db) as store:
        assert await HumanInputHandler(store=store).list_pending() == []


async def test_a_turn_resumed_before_the_answer_waits_for_it_without_asking_again(
    tmp_path: Path, agents: Callable[[Path, str], Awaitable[Process]]
) -> None:
    db = tmp_path / "kit.db"
    first = await agents(db, "ask")
    asked = await _line(first)
    first.send_signal(signal.SIGKILL)
    await first.wait()

    second = await agents(db, "resume")
    async with SQLiteStore(db) as store:
        desk = HumanInputHandler(store=store)
        # The resumed turn re-attached: still one question, the same one.
        [request] = await desk.list_pending()
        assert request.pending_id == asked["asked"]
        assert await desk.aresolve(request.pending_id, "Porto") is True

    outcome = await _line(second)
    assert await second.wait() == 0
    assert outcome == {"replies": ["Booked a trip to Porto."], "generated": 1}

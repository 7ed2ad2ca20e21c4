"""A server process of the AG-UI or A2A door on a durable store, for the tests that kill it
while its turn waits on a question (:func:`killed_after_asking` runs it), and for those
whose turn fails in it once answered from another process (:func:`asking_peer`).

    main(KIND, WHERE, DOOR, FOLDER[, "fragile"])

``KIND WHERE`` name the deployment's stores as :class:`tests.core.room_stores.Place` does;
``DOOR`` is ``agui`` or ``a2a``; ``FOLDER`` holds the A2A tasks. The caller ``alice`` sends
"Paint it" (thread ``t1``, context ``ctx-1``) and the turn asks a question; the process
prints one JSON line (the AG-UI interrupt's id and the messages the front end holds, or the
A2A task's id), then waits until killed. With ``fragile``, the agent's model is
:class:`tests.adapters.fragile_model.Fragile`: the caller sends "Ask", the turn fails once
its question is answered, and the process prints a second line once the task the door runs
the turn in has ended (the failure recorded in the room store). The process is forked from
one that imported this module and the doors' test kits (:mod:`tests.forked_processes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests import forked_processes
from tests.adapters.fragile_model import Fragile
from tests.core.room_stores import Place
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix

PATIENCE = 60.0
LEASE = 30.0
"""The kit's default turn lease, in seconds."""
TURNS = {"agui": "agui-turns-t1", "a2a": "a2a-turn-ctx-1"}
"""The name of the task each door runs the caller's turns in (thread ``t1``, context
``ctx-1``)."""


def durable_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """A deployment's data on the durable store ``request.param`` names."""
    if request.param == "sqlite":
        return Place.sqlite(tmp_path / "kit.db")
    if request.param == "postgres":
        dsn = request.getfixturevalue("postgres_server").dsn
        return Place.postgres(dsn, request.getfixturevalue("postgres_schema"))
    server: RedisServer = request.getfixturevalue("redis_server")
    return Place.redis(server.url, fresh_prefix())


async def killed_after_asking(place: Place, door: str, folder: Path) -> dict[str, Any]:
    """Run ``door``'s server in a process of its own until its turn asks, then kill it
    (SIGKILL); what it said before it died."""
    async with asking_peer(place, door, folder) as said:
        return said


@contextlib.asynccontextmanager
async def asking_peer(
    place: Place,
    door: str,
    folder: Path,
    *,
    fragile: bool = False,
    ended: asyncio.Event | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """Run ``door``'s server in a process of its own until its turn asks; what it said,
    while it runs on (killed, SIGKILL, when the block ends). With ``fragile``, its turn
    fails once its question is answered, and ``ended`` is set once the process says the
    turn ended there (its failure recorded)."""
    mode = ["fragile"] if fragile else []
    peer = await forked_processes.start(
        main, forked_processes.ROOT, place.kind, place.where, door, str(folder), *mode
    )
    listening: asyncio.Task[None] | None = None
    try:
        async with asyncio.timeout(PATIENCE):
            line = await peer.stdout.readline()
        assert line, "the server process ended without a word"
        said: dict[str, Any] = json.loads(line)
        if ended is not None:
            listening = asyncio.get_running_loop().create_task(_set_on_line(peer.stdout, ended))
        yield said
    finally:
        if listening is not None:
            listening.cancel()
        peer.kill()  # SIGKILL
        await peer.wait()


async def _set_on_line(stdout: asyncio.StreamReader, ended: asyncio.Event) -> None:
    if await stdout.readline():
        ended.set()


async def main(kind: str, where: str, door: str, folder: str, *mode: str) -> None:
    place = Place(kind, where)
    rooms, questions = place.rooms(), place.questions()
    fragile = mode == ("fragile",)
    provider = Fragile() if fragile else None
    text = "Ask" if fragile else "Paint it"
    if door == "agui":
        from agui_front import Front, ask, interrupts

        front = Front([ask()], questions=questions, rooms=rooms, provider=provider)
        [interrupt] = interrupts(await front.run(text))
        said: dict[str, Any] = {"interrupt": interrupt.id, "messages": front.messages}
    else:
        from a2a_world import FileTaskStore, World
        from a2a_world import ask as a2a_ask

        tasks = FileTaskStore(Path(folder))
        world = World([a2a_ask()], questions=questions, rooms=rooms, tasks=tasks, provider=provider)
        async with world.http() as http:
            task = await world.send(http, text=text)
        said = {"task": task.id}
    print(json.dumps(said), flush=True)
    if fragile:
        [turn] = [t for t in asyncio.all_tasks() if t.get_name() == TURNS[door]]
        await turn
        print(json.dumps({"ended": TURNS[door]}), flush=True)
    await asyncio.Event().wait()

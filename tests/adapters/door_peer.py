"""A server process of the AG-UI or A2A door on a durable store, for the tests that kill it
while its turn waits on a question (:func:`killed_after_asking` runs it).

    python door_peer.py KIND WHERE DOOR FOLDER

``KIND WHERE`` name the deployment's stores as :class:`tests.core.room_stores.Place` does;
``DOOR`` is ``agui`` or ``a2a``; ``FOLDER`` holds the A2A tasks. The caller ``alice`` sends
"Paint it" (thread ``t1``, context ``ctx-1``) and the turn asks a question; the process
prints one JSON line (the AG-UI interrupt's id and the messages the front end holds, or the
A2A task's id), then waits until killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.core.room_stores import Place
from tests.servers.redis_server import RedisServer
from tests.servers.stores import fresh_prefix

HERE = Path(__file__).parent
PATIENCE = 60.0


def durable_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """A deployment's data on the durable store ``request.param`` names."""
    if request.param == "sqlite":
        return Place.sqlite(tmp_path / "kit.db")
    if request.param == "postgres":
        return Place.postgres(request.getfixturevalue("postgres_server").dsn, fresh_prefix())
    server: RedisServer = request.getfixturevalue("redis_server")
    return Place.redis(server.url, fresh_prefix())


async def killed_after_asking(place: Place, door: str, folder: Path) -> dict[str, Any]:
    """Run ``door``'s server in a process of its own until its turn asks, then kill it
    (SIGKILL); what it said before it died."""
    paths = [str(HERE / "agui"), str(HERE / "a2a"), *sys.path]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    peer = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        place.kind,
        place.where,
        door,
        str(folder),
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert peer.stdout is not None
        async with asyncio.timeout(PATIENCE):
            line = await peer.stdout.readline()
        assert line, "the server process ended without a word"
    finally:
        peer.send_signal(signal.SIGKILL)
        await peer.wait()
    said: dict[str, Any] = json.loads(line)
    return said


async def main(kind: str, where: str, door: str, folder: str) -> None:
    place = Place(kind, where)
    rooms, questions = place.rooms(), place.questions()
    if door == "agui":
        from agui_front import Front, ask, interrupts

        front = Front([ask()], questions=questions, rooms=rooms)
        [interrupt] = interrupts(await front.run("Paint it"))
        said: dict[str, Any] = {"interrupt": interrupt.id, "messages": front.messages}
    else:
        from a2a_world import FileTaskStore, World
        from a2a_world import ask as a2a_ask

        tasks = FileTaskStore(Path(folder))
        world = World([a2a_ask()], questions=questions, rooms=rooms, tasks=tasks)
        async with world.http() as http:
            task = await world.send(http, text="Paint it")
        said = {"task": task.id}
    print(json.dumps(said), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

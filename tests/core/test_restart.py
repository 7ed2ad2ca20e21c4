"""A kit killed with SIGKILL at any step of a turn finishes the turn on restart, losing nothing.

The agent process (``restart_agent.py``, forked from a server that imported it) freezes
itself right after a chosen durable write and says so on its stdout; the test kills it
there, then a new process runs ``resume_pending()``. Whatever the instant, the message gets
one turn, the turn one reply, and the question is asked once and announced once. Every test
runs on each durable deployment: rooms and questions in one SQLite file, or both on Redis.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from tests.core.restart_agent import STOPS
from tests.core.restart_agent import main as agent
from tests.core.room_stores import Place
from tests.forked_processes import ROOT, Peer
from tests.forked_processes import start as start_peer

from roomkit.tools.human_input import HumanInputHandler

Start = Callable[..., Awaitable[Peer]]

REPLY = "Booked a trip to Lisbon."


@pytest.fixture
async def agents() -> AsyncIterator[Start]:
    """Starts agent processes; any still running at the end is killed."""
    started: list[Peer] = []

    async def start(place: Place, mode: str, *, stop_at: str | None = None) -> Peer:
        env = dict(os.environ)
        env.pop("ROOMKIT_STOP_AT", None)
        if stop_at is not None:
            env["ROOMKIT_STOP_AT"] = stop_at
        process = await start_peer(agent, ROOT, place.kind, place.where, mode, env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _line(process: Peer) -> dict[str, object]:
    assert process.stdout is not None
    async with asyncio.timeout(30):
        raw = await process.stdout.readline()
    assert raw, "the agent process ended without a word"
    line: dict[str, object] = json.loads(raw)
    return line


async def _kill(process: Peer) -> None:
    process.send_signal(signal.SIGKILL)
    assert await process.wait() == -signal.SIGKILL


async def _answer(place: Place, pending_id: object, answer: str = "Lisbon") -> bool:
    async with place.questions() as store:  # type: ignore[attr-defined]
        answered: bool = await HumanInputHandler(store=store).aresolve(
            str(pending_id), answer, by="ann"
        )
        return answered


async def test_a_turn_killed_while_waiting_resumes_with_the_answer_given_meanwhile(
    place: Place, agents: Start
) -> None:
    first = await agents(place, "ask", stop_at="announced")
    asked = await _line(first)
    assert await _line(first) == {"at": "announced"}
    await _kill(first)

    async with place.questions() as store:  # type: ignore[attr-defined]
        desk = HumanInputHandler(store=store)
        [request] = await desk.list_pending(room_id="trip")
        assert request.pending_id == asked["asked"]
        assert request.actor_id == "ann"
        assert await desk.aresolve(request.pending_id, "Lisbon", by="ann") is True

    second = await agents(place, "resume")
    outcome = await _line(second)
    assert await second.wait() == 0

    # The model was asked once more (for the reply), not for the tool call again.
    assert outcome == {"replies": [REPLY], "generated": 1}
    async with place.rooms() as rooms:  # type: ignore[attr-defined]
        history = [event.content.body for event in await rooms.list_events("trip")]
        assert history == ["Plan my holiday", REPLY]
        assert await rooms.open_turns() == []
    async with place.questions() as store:  # type: ignore[attr-defined]
        assert await HumanInputHandler(store=store).list_pending() == []


async def test_a_turn_resumed_before_the_answer_waits_for_it_without_asking_again(
    place: Place, agents: Start
) -> None:
    first = await agents(place, "ask", stop_at="announced")
    asked = await _line(first)
    await _line(first)
    await _kill(first)

    second = await agents(place, "resume")
    async with place.questions() as store:  # type: ignore[attr-defined]
        desk = HumanInputHandler(store=store)
        # The resumed turn re-attaches: still one question, the same one.
        [request] = await desk.list_pending()
        assert request.pending_id == asked["asked"]
        assert await desk.aresolve(request.pending_id, "Porto") is True

    # The first line is the reply: the question, announced before the kill, is not again.
    outcome = await _line(second)
    assert await second.wait() == 0
    assert outcome == {"replies": ["Booked a trip to Porto."], "generated": 1}


# The model calls the resumed process makes: none for what the journal already holds.
GENERATED_AFTER = {"inbound": 2, "step -1": 2, "step 1000": 0, "finish": 0}


@pytest.mark.parametrize("stop", STOPS)
async def test_a_kill_after_any_write_loses_no_turn_reply_or_announcement(
    place: Place, agents: Start, stop: str
) -> None:
    """Killed after ``stop``'s write, a restarted kit finishes the turn: one reply in the
    room, one question, announced once.

    Among the stops: right after the message was stored ("inbound": the message still gets
    its turn), right after the question was stored ("question": it is still announced), and
    right after the last model round ("step 1000", "finish": the reply is still stored).
    """
    answered_before = STOPS.index(stop) > STOPS.index("announced")
    asked: list[object] = []

    first = await agents(place, "ask", stop_at=stop)
    while (line := await _line(first)) != {"at": stop}:
        asked.append(line["asked"])
        if answered_before:
            assert await _answer(place, line["asked"]) is True
    await _kill(first)

    second = await agents(place, "resume")
    if asked and not answered_before:
        # Announced before the kill: the person answers while the kit restarts.
        assert await _answer(place, asked[0]) is True
    while "replies" not in (line := await _line(second)):
        asked.append(line["asked"])
        assert await _answer(place, line["asked"]) is True
    assert await second.wait() == 0

    expected_replies = [] if stop == "finish" else [REPLY]
    assert line == {"replies": expected_replies, "generated": GENERATED_AFTER.get(stop, 1)}
    assert len(asked) == 1, f"the question was announced {len(asked)} times"
    async with place.rooms() as rooms:  # type: ignore[attr-defined]
        history = [event.content.body for event in await rooms.list_events("trip")]
        assert history == ["Plan my holiday", REPLY]
        assert await rooms.open_turns() == []
    async with place.questions() as store:  # type: ignore[attr-defined]
        desk = HumanInputHandler(store=store)
        assert await desk.list_pending() == []
        request = await desk.get_request(str(asked[0]))
        assert request is not None
        assert request.result == "Lisbon"


async def test_a_message_queued_behind_a_waiting_turn_survives_a_kill(
    place: Place, agents: Start
) -> None:
    """Killed while ann's turn waits on her and bob's message waits behind it, the kit
    restarted re-drives both in order: bob's turn starts once ann's reply is stored."""
    first = await agents(place, "queue")
    asked = await _line(first)
    assert await _line(first) == {"queued": "Me too"}
    await _kill(first)
    async with place.rooms() as rooms:  # type: ignore[attr-defined]
        assert len(await rooms.open_turns()) == 2

    second = await agents(place, "resume")
    assert await _answer(place, asked["asked"], "Lisbon") is True
    bob = await _line(second)  # bob's turn asks him, after ann's turn is done
    async with place.rooms() as rooms:  # type: ignore[attr-defined]
        history = [event.content.body for event in await rooms.list_events("trip")]
        assert history == ["Plan my holiday", "Me too", REPLY]
    async with place.questions() as store:  # type: ignore[attr-defined]
        request = await HumanInputHandler(store=store).get_request(str(bob["asked"]))
        assert request is not None
        assert request.actor_id == "bob"
    assert await _answer(place, bob["asked"], "Paris") is True
    outcome = await _line(second)
    assert await second.wait() == 0

    assert outcome["replies"] == [REPLY, "Booked a trip to Paris."]
    async with place.rooms() as rooms:  # type: ignore[attr-defined]
        assert await rooms.open_turns() == []

"""A worker that dies while it runs one of roomkit's activities: Temporal hears no heartbeat
and retries the activity on another worker within the heartbeat timeout, not after the
attempt's whole ``start_to_close_timeout``. The asks here set a heartbeat timeout of
:data:`HEARTBEAT` through ``ActivityTimeouts``, so the tests do not wait out the default
5 s. Histories recorded before the activities had a heartbeat timeout replay unchanged.

The worker runs in a process of its own, killed (SIGKILL) while its store is frozen under
the activity: its Redis store reaches the server through a relay that freezes the server
(SIGSTOP) just before the activity's first command passes, and tells the test. The
histories in ``histories/`` were recorded on the dev server by the code before the heartbeat.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import TimeoutType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowHistory
from temporalio.exceptions import CancelledError
from temporalio.worker import Replayer
from tests.adapters.temporal.conftest import World, running, worker_process
from tests.adapters.temporal.history import scheduled_timeouts, wait_for_event, waiting
from tests.adapters.temporal.temporal_server import TemporalServer
from tests.adapters.temporal.workflows import Ask
from tests.servers.redis_server import RedisServer
from tests.tools.human_input.stores.redis_relay import Relay

from roomkit.adapters.temporal._protocol import CREATE_ACTIVITY, EXPIRE_ACTIVITY
from roomkit.models.pending_input import PendingInputStatus

HISTORIES = Path(__file__).parent / "histories"
HEARTBEAT = 1
"""Seconds Temporal waits for a heartbeat of the asks' activities here."""
DEADLINE = 20.0
"""Seconds from the kill to the workflow's result: well inside the 30 s an attempt may run,
which is all a worker that sends no heartbeat leaves Temporal to go by."""
CANCEL_REQUESTED = "workflow_execution_cancel_requested_event_attributes"


@pytest.fixture
async def world(temporal_server: TemporalServer, relay: Relay) -> AsyncIterator[World]:
    """A world whose stores, the killed worker's too, reach Redis through the relay."""
    client = await Client.connect(temporal_server.address)
    world = World(temporal_server, relay.url, client)
    await world.setup()
    try:
        yield world
    finally:
        await world.close()


async def retried_after(handle: WorkflowHandle[Any, Any], activity: str) -> list[int]:
    """How the attempt before each completed attempt of ``activity`` ended (its timeout
    type; 0 for a first attempt)."""
    scheduled: set[int] = set()
    ended: list[int] = []
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            if event.activity_task_scheduled_event_attributes.activity_type.name == activity:
                scheduled.add(event.event_id)
        elif event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            if started.scheduled_event_id in scheduled:
                ended.append(started.last_failure.timeout_failure_info.timeout_type)
    return ended


def frozen_before(server: RedisServer, relay: Relay, marker: str) -> asyncio.Event:
    """An event set once the server is frozen, just before the next command naming
    ``marker`` reaches it."""
    frozen = asyncio.Event()

    def freeze() -> None:
        server.pause()
        frozen.set()

    relay.call_before(marker.encode(), freeze)
    return frozen


async def kill(process: asyncio.subprocess.Process, server: RedisServer) -> None:
    """Kill the worker (SIGKILL) while its activity waits on the frozen server; thaw it."""
    process.kill()
    await process.wait()
    server.resume()


async def test_a_worker_killed_during_the_create_is_replaced_within_seconds(
    redis_restartable: RedisServer, relay: Relay, world: World
) -> None:
    workflow_id = f"wf-{uuid.uuid4().hex[:8]}"
    # The first command naming the workflow is its create activity's, in the worker.
    frozen = frozen_before(redis_restartable, relay, workflow_id)
    async with worker_process(world) as process:
        handle = await world.start(Ask, {"heartbeat": HEARTBEAT}, id=workflow_id)
        await frozen.wait()
        await kill(process, redis_restartable)
        # A guard, not a measurement: Temporal learns of the dead worker only from the
        # heartbeat it misses; without one, the create's retry waits out the attempt's 30 s.
        async with asyncio.timeout(DEADLINE), running(world.worker(Ask), world.notifier()):
            await wait_for_event(handle, waiting)
            pending_id = await world.created.next()
            answered = await world.answer(pending_id, "alice", {"answer": "Hotel E"})
            result = await handle.result()
    assert answered.status_code == 200, answered.text
    assert result == {"answer": "Hotel E"}
    assert await retried_after(handle, CREATE_ACTIVITY) == [TimeoutType.TIMEOUT_TYPE_HEARTBEAT]
    assert await scheduled_timeouts(handle, CREATE_ACTIVITY) == [(30.0, HEARTBEAT)]
    mine = [
        request
        for request in await world.desk_handler.list_settled()
        if request.tool_call_id.endswith(f":{handle.id}")
    ]
    assert [request.pending_id for request in mine] == [pending_id]


async def test_a_worker_killed_during_the_expire_is_replaced_within_seconds(
    redis_restartable: RedisServer, relay: Relay, world: World
) -> None:
    """The person's deadline passed: the default comes within seconds of the worker's
    death, not half a minute later."""
    async with worker_process(world) as process:
        spec = {"default": "Hotel B", "timeout": 1, "grace": 0.1, "heartbeat": HEARTBEAT}
        handle = await world.start(Ask, spec)
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        # The create is done: the next command naming the request is the expire activity's,
        # in the worker, once the workflow's timer fires.
        frozen = frozen_before(redis_restartable, relay, pending_id)
        await frozen.wait()
        await kill(process, redis_restartable)
        async with asyncio.timeout(DEADLINE), running(world.worker(Ask)):  # a guard, as above
            result = await handle.result()
    assert result == {"answer": "Hotel B"}
    assert await retried_after(handle, EXPIRE_ACTIVITY) == [TimeoutType.TIMEOUT_TYPE_HEARTBEAT]
    assert await scheduled_timeouts(handle, EXPIRE_ACTIVITY) == [(30.0, HEARTBEAT)]
    defaulted = [
        e for e in await world.desk_handler.history(pending_id) if e["type"] == "defaulted"
    ]
    assert [entry["answer"] for entry in defaulted] == ["Hotel B"]


@pytest.mark.parametrize("name", ["answered", "expired", "cancelled"])
async def test_a_history_recorded_before_the_heartbeat_replays(name: str) -> None:
    """A workflow whose activities were scheduled without a heartbeat timeout (answered;
    timed out to its ladder's default; cancelled, its question withdrawn) replays on the
    code that schedules them with one: Temporal compares an activity's type and id, not
    its timeouts."""
    history = WorkflowHistory.from_json(name, (HISTORIES / f"{name}.json").read_text())
    replayed = await Replayer(workflows=[Ask]).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_a_workflow_cancelled_while_its_question_is_being_made_withdraws_it(
    relay: Relay, world: World
) -> None:
    """The cancel comes while the create activity waits on the store: the workflow waits for
    the request it made and withdraws it, rather than leaving it on the desk to its deadline."""
    workflow_id = f"wf-{uuid.uuid4().hex[:8]}"
    gate = relay.gate(workflow_id.encode())
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, {}, id=workflow_id)
        await gate.holding(1)  # the create's first write naming the workflow waits
        await handle.cancel()
        await wait_for_event(handle, lambda event: event.HasField(CANCEL_REQUESTED))
        gate.open()
        pending_id = await world.created.next()
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    assert isinstance(failed.value.cause, CancelledError)
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    assert (request.status, request.withdrawn) == (PendingInputStatus.REJECTED, True)
    assert await world.desk_handler.list_pending() == []
    replayed = await Replayer(workflows=[Ask]).replay_workflow(await handle.fetch_history())
    assert replayed.replay_failure is None


async def test_a_history_whose_create_was_cancelled_with_the_workflow_replays() -> None:
    """A workflow cancelled while its question was made, by the code that cancelled the
    create activity with it (recorded on the dev server), replays as it ran."""
    text = (HISTORIES / "cancelled-while-made.json").read_text()
    history = WorkflowHistory.from_json("cancelled-while-made", text)
    replayed = await Replayer(workflows=[Ask]).replay_workflow(history)
    assert replayed.replay_failure is None

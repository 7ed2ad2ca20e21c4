"""Which worker runs roomkit's activities: one given other activities but not these fails
the ask saying what to add; one given none (a workflow-only worker, beside activity workers
on its task queue) has the ask wait for a worker that runs them, warning while none does."""

from __future__ import annotations

import asyncio
import logging

import pytest
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.worker import Replayer, Worker
from temporalio.worker._activity import _ActivityWorker
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.workflows import Ask

from roomkit.adapters.temporal._protocol import CREATE_ACTIVITY

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
"""The store plays no part in which worker takes an activity."""

ADD = "activities=roomkit.adapters.temporal.activities(handler)"


@activity.defn(name="book")
async def book() -> None:
    """An activity of the application's own; roomkit's are missing beside it."""


class Warned(logging.Handler):
    """Sets ``event`` once a warning holding each of ``words`` is logged, from any thread
    (workflow code runs in the worker's threads)."""

    def __init__(self, *words: str) -> None:
        super().__init__(logging.WARNING)
        self.words = words
        self.messages: list[str] = []
        self.event = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if all(word in message for word in self.words):
            self.messages.append(message)
            self._loop.call_soon_threadsafe(self.event.set)


async def untaken_creates(handle: WorkflowHandle) -> tuple[list[float], int]:
    """The bound each scheduling of the create carries on the wait for a worker (seconds),
    and how many of them timed out before a worker took them."""
    bounds: list[float] = []
    creates: set[int] = set()
    timed_out = 0
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == CREATE_ACTIVITY:
                creates.add(event.event_id)
                bounds.append(scheduled.schedule_to_start_timeout.ToTimedelta().total_seconds())
        elif event.HasField("activity_task_timed_out_event_attributes"):
            untaken = event.activity_task_timed_out_event_attributes.scheduled_event_id
            timed_out += untaken in creates
    return bounds, timed_out


@SQLITE_ONLY
async def test_a_worker_without_roomkits_activities_fails_the_ask_clearly(world: World) -> None:
    worker = Worker(world.client, task_queue=world.task_queue, workflows=[Ask], activities=[book])
    async with worker:
        result = await (await world.start(Ask, {})).result()
    assert result["error"] == "RuntimeError"
    assert ADD in result["message"]


@SQLITE_ONLY
async def test_a_worker_with_no_activities_warns_and_the_ask_waits_for_one_with_them(
    world: World,
) -> None:
    """A worker given no activities polls for none: nobody takes the ask's create within
    ``unpolled``, a warning says what to add, and the create is scheduled again; once a
    worker with roomkit's activities starts on the task queue, it takes it and the ask goes
    on, with one request made."""
    warned = Warned(repr(world.task_queue), "has taken roomkit's create activity for 1 s", ADD)
    logger = logging.getLogger("temporalio.workflow")
    logger.addHandler(warned)
    workflows_only = Worker(world.client, task_queue=world.task_queue, workflows=[Ask])
    try:
        async with running(workflows_only, world.notifier()):
            handle = await world.start(Ask, {"unpolled": 1})
            async with asyncio.timeout(30):  # a bound on a hang, not a wait for state
                await warned.event.wait()
            async with running(world.worker()):  # activities only: a split deployment
                pending_id = await world.created.next()
                assert await world.desk_handler.aresolve(pending_id, "Hotel Lisboa")
                async with asyncio.timeout(30):
                    result = await handle.result()
    finally:
        logger.removeHandler(warned)
    assert result == {"answer": "Hotel Lisboa"}
    mine = [
        request.pending_id
        for request in await world.desk_handler.list_settled()
        if request.tool_call_id.endswith(f":{handle.id}")
    ]
    assert mine == [pending_id]
    bounds, timed_out = await untaken_creates(handle)
    assert timed_out == len(bounds) - 1 >= 1, "one scheduled and timed-out pair per wait"
    assert bounds == [2.0**n for n in range(len(bounds))], "the bound doubles"
    # A worker that runs roomkit's activities (as the replayer says it does) replays it.
    history = await handle.fetch_history()
    replayed = await Replayer(workflows=[Ask]).replay_workflow(history)
    assert replayed.replay_failure is None


@SQLITE_ONLY
async def test_a_worker_whose_registration_check_breaks_asks_as_one_that_runs_them(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's private check of a worker's activities failing otherwise than saying one
    is missing tells nothing: the ask is made, not failed."""

    def broken(self: _ActivityWorker, name: str) -> None:
        raise RuntimeError("the check changed")

    monkeypatch.setattr(_ActivityWorker, "assert_activity_valid", broken)
    async with running(world.worker(Ask), world.notifier()):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        assert await world.desk_handler.aresolve(pending_id, "Hotel Lisboa")
        async with asyncio.timeout(30):  # a bound on a hang, not a wait for state
            result = await handle.result()
    assert result == {"answer": "Hotel Lisboa"}

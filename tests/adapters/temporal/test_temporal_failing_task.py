"""A workflow whose task keeps failing (a worker deployed without it, or with a bug) while
its person answers: Temporal takes no update from it for now, and says so as it says of a
workflow that has ended. The run still runs: the delivery is retried, not recorded as
refused, and reaches the workflow once a worker runs it again."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.history.v1 import HistoryEvent
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import updates_taken, wait_for_event, waiting
from tests.adapters.temporal.workflows import Ask, AskTwice

from roomkit.adapters.temporal import TemporalUpdates, update_id_of
from roomkit.notify import DeliveryError, Notice

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
_TASK_TIMEOUT = timedelta(seconds=2)
"""The run's workflow task timeout. The worker reports only the first failure of a task;
each later attempt of it fails silently and is tried again once this timeout passes. Temporal
refuses updates from the third attempt on, and the fixed worker gets the fourth: both come
two timeouts after the first failure (Temporal's 10 s default would make that 20 s)."""
_ATTEMPTS = 60
"""Update calls of one second each, at most, before Temporal stops waiting for the failing
task and refuses the update (it does after two task timeouts or so)."""


def delivered(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in history if entry["type"] == "delivered"]


def task_failed(event: HistoryEvent) -> bool:
    return event.HasField("workflow_task_failed_event_attributes")


async def refusal_while_failing(surface: TemporalUpdates, notice: Notice) -> DeliveryError:
    """The first error of a delivery that is not a call timing out: what Temporal says once
    it refuses updates of the failing run."""
    for _ in range(_ATTEMPTS):
        try:
            await surface.send(notice)
        except DeliveryError as error:
            if "took no update within" not in str(error):
                return error
        else:
            raise AssertionError("the failing run took the update")
    raise AssertionError(f"Temporal took no update and refused none in {_ATTEMPTS} calls")


@SQLITE_ONLY
async def test_an_answer_given_while_the_workflow_task_fails_reaches_the_workflow(
    world: World,
) -> None:
    async with running(world.worker(Ask, max_cached_workflows=0)):
        handle = await world.start(Ask, {"timeout": 3600}, task_timeout=_TASK_TIMEOUT)
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
    surface = TemporalUpdates(world.client, rpc_timeout=1.0)
    surface.bind_handler(world.desk_handler)
    try:
        # A worker deployed without the workflow: each of its tasks fails.
        async with running(world.worker(AskTwice, max_cached_workflows=0)):
            await handle.signal("nudge")
            await wait_for_event(handle, task_failed)
            answered = await world.answer(pending_id, "alice", {"answer": "Hotel F"})
            request = await world.desk_handler.get_request(pending_id)
            assert request is not None
            notice = Notice("question_settled", f"{pending_id}.settle.temporal.-", request)
            refusal = await refusal_while_failing(surface, notice)
    finally:
        await surface.aclose()
    assert answered.status_code == 200, answered.text
    assert refusal.retry, refusal
    assert "is running but takes no update for now" in str(refusal)
    assert delivered(await world.desk_handler.history(pending_id)) == [], "no refusal recorded"
    # The fixed worker is back: the notifier's retry reaches the workflow.
    async with running(world.worker(Ask), notifier := world.notifier()):
        async with asyncio.timeout(60):
            result = await handle.result()
        await notifier.wait_idle()
    assert result == {"answer": "Hotel F"}
    assert await updates_taken(handle) == [update_id_of(pending_id)]
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e.get("taken_by")) for e in entries] == [(True, None)]

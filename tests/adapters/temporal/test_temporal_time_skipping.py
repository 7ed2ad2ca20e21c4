"""Deadlines and ladders a day long, on the time-skipping test server: the person's deadline
is the request's, the workflow's timer runs a grace longer, and a ladder's default, an answer
given before the deadline and an escalation hours in all come out as they would in real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import Worker
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import updates_taken
from tests.adapters.temporal.skipping import FollowServerTime, ServerTime, java_test_server
from tests.adapters.temporal.workflows import Ask

from roomkit.adapters.temporal import activities, update_id_of

DAY = 86_400
HOURS_12 = 43_200


class Skipping(World):
    """A world on the time-skipping test server, its stores on the server's clock."""

    def __init__(self, env: WorkflowEnvironment, store_url: str) -> None:
        self.env = env
        self.server_time = ServerTime()
        # Outcomes are kept past a day's deadline and its grace, as a deployment must.
        options = {"clock": self.server_time, "retention_seconds": 7 * DAY}
        super().__init__(None, store_url, env.client, **options)

    def skipping_worker(self, *workflows: object) -> Worker:
        return self.worker(*workflows, interceptors=[FollowServerTime(self.server_time)])

    async def skip(self, duration: timedelta) -> None:
        """Move the server's clock, and the stores' with it, ``duration`` ahead."""
        await self.env.sleep(duration)
        self.server_time.saw(await self.env.get_current_time())


@pytest.fixture
async def skipping(store_url: str) -> AsyncIterator[Skipping]:
    binary = java_test_server()
    if binary is None:
        pytest.skip("no `temporal-test-server`: install the dev dependencies")
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=binary)
    world = Skipping(env, store_url)
    try:
        await world.setup()
        yield world
    finally:
        await world.close()
        await env.shutdown()


async def test_a_day_long_deadline_gives_the_ladders_default_or_a_timeout(
    skipping: Skipping,
) -> None:
    began = await skipping.env.get_current_time()
    async with running(skipping.skipping_worker(Ask), skipping.notifier()):
        defaulted = await skipping.start(Ask, {"timeout": DAY, "default": "Hotel B"})
        first = await skipping.created.next()
        timed_out = await skipping.start(Ask, {"timeout": DAY})
        second = await skipping.created.next()
        # One result() at a time: each unlocks the server's time skipping while it waits.
        results = [await defaulted.result(), await timed_out.result()]
    ended = await skipping.env.get_current_time()
    assert results[0] == {"answer": "Hotel B"}
    assert results[1]["error"] == "HumanInputTimeoutError"
    # The workflow's timer is the deadline plus the grace: a day and a minute passed.
    assert ended - began >= timedelta(seconds=DAY + 60)
    history = [entry["type"] for entry in await skipping.desk_handler.history(first)]
    assert history.count("defaulted") == 1
    for pending_id in (first, second):
        request = await skipping.desk_handler.get_request(pending_id)
        assert request is not None
        assert request.status.value == "timed_out"


async def test_an_answer_given_before_the_deadline_wins_over_the_workflows_timer(
    skipping: Skipping,
) -> None:
    # No notifier runs: the answer is never delivered, and the workflow's timer finds it.
    async with running(skipping.skipping_worker(Ask)):
        handle = await skipping.start(Ask, {"timeout": DAY, "default": "Hotel B"})
        pending_id = await skipping.created.next()
        await skipping.skip(timedelta(hours=23))
        answered = await skipping.answer(pending_id, "alice", {"answer": "Hotel C"})
        result = await handle.result()
    # A notifier started now sends the answer to a workflow that took it and ended.
    async with running(notifier := skipping.notifier()):
        await notifier.wait_idle()
    assert answered.status_code == 200, answered.text
    assert result == {"answer": "Hotel C"}
    assert await updates_taken(handle) == []
    request = await skipping.desk_handler.get_request(pending_id)
    assert request is not None
    assert request.status.value == "resolved"
    history = await skipping.desk_handler.history(pending_id)
    assert "defaulted" not in [entry["type"] for entry in history]
    delivered = [entry for entry in history if entry["type"] == "delivered"]
    assert [(e["accepted"], e.get("taken_by")) for e in delivered] == [(True, "timer")]


async def test_a_ladder_escalates_twelve_hours_in_and_the_new_approver_answers(
    skipping: Skipping,
) -> None:
    spec = {"timeout": DAY, "escalate": [[HOURS_12, "bob"]]}
    async with running(skipping.skipping_worker(Ask), notifier := skipping.notifier()):
        handle = await skipping.start(Ask, spec)
        pending_id = await skipping.created.next()
        early = await skipping.answer(pending_id, "bob", {"answer": "too soon"})
        await skipping.skip(timedelta(hours=13))
        await notifier.wait_idle()  # the escalation came due: it has run
        answered = await skipping.answer(pending_id, "bob", {"answer": "Hotel E"})
        await notifier.wait_idle()  # delivered: else the workflow's timer would find it
        result = await handle.result()
    assert early.status_code == 404, "bob sees it only once the ladder escalates to him"
    assert answered.status_code == 200, answered.text
    assert result == {"answer": "Hotel E"}
    assert await updates_taken(handle) == [update_id_of(pending_id)]
    history = await skipping.desk_handler.history(pending_id)
    escalated = [entry for entry in history if entry["type"] == "escalated"]
    assert [(entry["approvers"], entry["surface"]) for entry in escalated] == [(["bob"], "ladder")]


async def test_overlapping_expire_attempts_record_the_default_once(skipping: Skipping) -> None:
    create, expire, _ = activities(skipping.worker_handler)
    ladder = {"steps": [], "default": "Hotel B"}
    ask = {
        "kind": "question",
        "tool_name": "choose",
        "arguments": {"question": "Which hotel?"},
        "key": "wf/first-run//1",
        "seq": 1,
        "timeout": float(DAY),
        "actor": "alice",
        "room_id": "room",
        "ladder": ladder,
    }
    environment = ActivityEnvironment()
    created = await environment.run(create, ask)
    skipping.server_time.ahead += DAY + 60  # the workflow's timer fired
    # An attempt that timed out while still running overlaps the next; the workflow asks
    # again when the timeout came by update.
    again = {"pending_id": created["pending_id"], "digest": created["digest"], "ladder": ladder}
    outcomes = await asyncio.gather(*(environment.run(expire, again) for _ in range(3)))
    outcomes.append(await environment.run(expire, again))
    assert [outcome["default"] for outcome in outcomes] == ["Hotel B"] * 4
    history = await skipping.desk_handler.history(created["pending_id"])
    assert [entry["type"] for entry in history].count("defaulted") == 1


async def test_a_default_no_store_keeps_fails_the_expire_once_not_for_ever(
    skipping: Skipping,
) -> None:
    """An ask scheduled before the workflow checked its ladder: its default cannot be
    recorded, and the expire activity says so, not to be retried."""
    create, expire, _ = activities(skipping.worker_handler)
    ladder = {"steps": [], "default": "Hotel \udc80"}
    ask = {
        "kind": "question",
        "tool_name": "choose",
        "arguments": {"question": "Which hotel?"},
        "key": "wf/first-run//1",
        "seq": 1,
        "timeout": float(DAY),
        "actor": "alice",
        "room_id": "room",
        "ladder": ladder,
    }
    environment = ActivityEnvironment()
    created = await environment.run(create, ask)
    skipping.server_time.ahead += DAY + 60  # the workflow's timer fired
    again = {"pending_id": created["pending_id"], "digest": created["digest"], "ladder": ladder}
    with pytest.raises(ApplicationError, match="its ladder's default cannot be recorded") as error:
        await environment.run(expire, again)
    assert error.value.non_retryable
    assert error.value.type == "ValueError"
    request = await skipping.desk_handler.get_request(created["pending_id"])
    assert request is not None
    assert request.status.value == "timed_out"
    history = await skipping.desk_handler.history(created["pending_id"])
    assert "defaulted" not in [entry["type"] for entry in history]

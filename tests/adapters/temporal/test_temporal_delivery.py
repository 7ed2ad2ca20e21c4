"""How an outcome reaches the workflow: once, however often it is sent; refused when it is
not the workflow's; retried while Temporal is down; taken by a worker that replaced one
killed between the create and the settle."""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Any

import pytest
from temporalio import activity, worker
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowUpdateInput,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
)
from tests.adapters.temporal.conftest import World, running, worker_process
from tests.adapters.temporal.history import (
    result_or_task_failure,
    updates_taken,
    wait_for_event,
    waiting,
)
from tests.adapters.temporal.temporal_server import TemporalServer
from tests.adapters.temporal.workflows import Ask, AskTwice

from roomkit.adapters.temporal import UPDATE_NAME, TemporalUpdates, update_id_of
from roomkit.adapters.temporal._protocol import CREATE_ACTIVITY
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.pending_input import arguments_digest
from roomkit.notify import Notice
from roomkit.stores.outbox import outbox_for


def delivered(history: list[dict[str, object]]) -> list[dict[str, object]]:
    return [entry for entry in history if entry["type"] == "delivered"]


class UpdateCalls(Interceptor):
    """The ids of the update calls a client makes, through the SDK's own interceptors."""

    def __init__(self) -> None:
        self.ids: list[str | None] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Counted(next, self.ids)


class _Counted(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, ids: list[str | None]) -> None:
        super().__init__(next)
        self.ids = ids

    async def start_workflow_update(
        self, input: StartWorkflowUpdateInput
    ) -> WorkflowUpdateHandle[object]:
        self.ids.append(input.update_id)
        return await super().start_workflow_update(input)


async def test_the_same_settle_sent_twice_reaches_the_workflow_once(world: World) -> None:
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await world.answer(pending_id, "alice", {"answer": "Hotel A"})
        request = await world.desk_handler.get_request(pending_id)
        assert request is not None
        notice = Notice("question_settled", f"{pending_id}.settle.temporal.-", request)
        # A notifier that sent it, then stopped before it could record so: it sends again.
        stopped = TemporalUpdates(world.client)
        receipts = [await stopped.send(notice), await stopped.send(notice)]
        result = await handle.result()
        after = await stopped.send(notice)
    # A notifier started now finds the request owed its ending, and the workflow took it.
    async with running(notifier := world.notifier()):
        await notifier.wait_idle()
    assert result == {"answer": "Hotel A"}
    assert receipts[0] == receipts[1] == after
    assert await updates_taken(handle) == [update_id_of(pending_id)]
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e["update_id"]) for e in entries] == [(True, update_id_of(pending_id))]


async def test_the_change_feed_and_the_outbox_deliver_one_settle_once(world: World) -> None:
    # A surface following the desk's own change feed, beside a notifier following the
    # store's feed and its outbox: three deliveries of one settle, and two sends at once.
    follower = TemporalUpdates(world.client)
    follower.bind_handler(world.desk_handler)
    try:
        async with running(world.worker(Ask), notifier := world.notifier()):
            handle = await world.start(Ask, {})
            pending_id = await world.created.next()
            await wait_for_event(handle, waiting)
            await world.answer(pending_id, "alice", {"answer": "Hotel E"})
            request = await world.desk_handler.get_request(pending_id)
            assert request is not None
            notice = Notice("question_settled", f"{pending_id}.settle.temporal.-", request)
            receipts = await asyncio.gather(follower.send(notice), follower.send(notice))
            result = await handle.result()
            await notifier.wait_idle()
    finally:
        await follower.aclose()
    assert result == {"answer": "Hotel E"}
    assert (
        receipts[0]
        == receipts[1]
        == {
            "update_id": update_id_of(pending_id),
            "workflow_id": handle.id,
        }
    )
    assert await updates_taken(handle) == [update_id_of(pending_id)]
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e["update_id"]) for e in entries] == [(True, update_id_of(pending_id))]
    items = await outbox_for(world.desk_handler).items_for(pending_id)
    settles = [item for item in items if "settle" in item.item_id]
    assert settles, "the outbox held the settle's delivery"
    assert all(item.done for item in settles), "and its delivery ended too"


async def test_one_process_calls_once_for_a_settle_its_feed_and_its_outbox_deliver(
    world: World,
) -> None:
    calls = UpdateCalls()
    client = Client(**{**world.client.config(), "interceptors": [calls]})
    async with running(world.worker(Ask), notifier := world.notifier(client)):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        await world.answer(pending_id, "alice", {"answer": "Hotel F"})
        result = await handle.result()
        await notifier.wait_idle()
    assert result == {"answer": "Hotel F"}
    # The outbox's delivery took the end of the change feed's: one call, not two.
    assert calls.ids == [update_id_of(pending_id)]
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e["update_id"]) for e in entries] == [(True, update_id_of(pending_id))]
    items = await outbox_for(world.desk_handler).items_for(pending_id)
    settles = [item for item in items if "settle" in item.item_id and item.body.get("surface")]
    assert [(item.done, item.receipt) for item in settles] == [
        (True, {"update_id": update_id_of(pending_id), "workflow_id": handle.id})
    ]


async def test_an_outcome_not_the_workflows_is_refused_and_recorded(world: World) -> None:
    async with running(world.worker(AskTwice), notifier := world.notifier()):
        handle = await world.start(AskTwice)
        first = await world.created.next()
        await wait_for_event(handle, waiting)
        digest = arguments_digest("choose", {"question": "First?"})
        outcome = {"pending_id": first, "seq": 1, "status": "resolved", "result": "x"}
        with pytest.raises(WorkflowUpdateFailedError) as wrong_digest:
            await handle.execute_update(UPDATE_NAME, {**outcome, "digest": "0" * 64}, id="d")
        # A request made to look like the workflow's first ask, and answered.
        forged = await world.desk_handler.create(
            "choose",
            {"question": "First?"},
            room_id="room",
            actor_id="alice",
            channel_id="temporal",
            tool_call_id=f"temporal:1:{handle.result_run_id}:{handle.id}",
        )
        assert await world.created.next() == forged.pending_id
        await notifier.wait_idle()  # announced: its ending is owed from now on
        await world.desk_handler.aresolve(forged.pending_id, "forged", by="alice")
        await notifier.wait_idle()
        await world.answer(first, "alice", {"answer": "real"})
        second = await world.created.next()
        again = {**outcome, "status": "rejected", "digest": digest}
        with pytest.raises(WorkflowUpdateFailedError) as settled_twice:
            await handle.execute_update(UPDATE_NAME, again, id="again")
        await world.answer(second, "alice", {"answer": "two"})
        result = await handle.result()
    assert "digest differs" in str(wrong_digest.value.cause)
    assert "settled already" in str(settled_twice.value.cause)
    assert result == {"answers": ["real", "two"]}
    assert await updates_taken(handle) == [update_id_of(first), update_id_of(second)]
    refusals = delivered(await world.desk_handler.history(forged.pending_id))
    assert [entry["accepted"] for entry in refusals] == [False]
    assert "is not ask 1" in str(refusals[0]["refused"])
    items = await outbox_for(world.desk_handler).items_for(forged.pending_id)
    sent = [item for item in items if item.body.get("surface") == "temporal"]
    assert [(item.done, item.attempts) for item in sent if "settle" in item.item_id] == [
        (True, 0)
    ], "a refusal is not retried"


async def test_an_outcome_the_workflows_own_timer_took_is_recorded_as_taken(
    world: World,
) -> None:
    """The deadline passed in the workflow, which ended before the notifier's update came:
    the workflow took the outcome all the same, and the history says how."""
    async with running(world.worker(Ask)):
        handle = await world.start(Ask, {"timeout": 1, "grace": 0.1})
        pending_id = await world.created.next()
        result = await handle.result()
    # A notifier that starts once the workflow has ended: its update comes too late.
    async with running(notifier := world.notifier()):
        await notifier.wait_idle()
    assert result["error"] == "HumanInputTimeoutError"
    assert await updates_taken(handle) == []
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e.get("taken_by"), e.get("refused")) for e in entries] == [
        (True, "timer", None)
    ]
    assert [(e["workflow_id"], e["update_id"]) for e in entries] == [
        (handle.id, update_id_of(pending_id))
    ]


class AnsweredBeforeTheCreateReported(worker.Interceptor):
    """The create activity's first attempt makes the request and fails before it reports, as
    a worker that died would; the person answers in between."""

    def __init__(self, world: World) -> None:
        self.world = world

    def intercept_activity(
        self, next: worker.ActivityInboundInterceptor
    ) -> worker.ActivityInboundInterceptor:
        return _Answering(next, self.world)


class _Answering(worker.ActivityInboundInterceptor):
    def __init__(self, next: worker.ActivityInboundInterceptor, world: World) -> None:
        super().__init__(next)
        self.world = world

    async def execute_activity(self, input: worker.ExecuteActivityInput) -> Any:
        result = await super().execute_activity(input)
        info = activity.info()
        if info.activity_type == CREATE_ACTIVITY and info.attempt == 1:
            await self.world.answer(result["pending_id"], "alice", {"answer": "Hotel G"})
            raise RuntimeError("the worker died before it reported")
        return result


async def test_an_outcome_the_asks_create_took_is_recorded_as_taken(world: World) -> None:
    """The retried create re-attached to the request answered meanwhile, and the workflow
    ended before the notifier's update came."""
    interceptor = AnsweredBeforeTheCreateReported(world)
    async with running(world.worker(Ask, interceptors=[interceptor])):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        result = await handle.result()
    async with running(notifier := world.notifier()):
        await notifier.wait_idle()
    assert result == {"answer": "Hotel G"}
    assert await updates_taken(handle) == []
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [(e["accepted"], e.get("taken_by")) for e in entries] == [(True, "create")]


async def test_an_outcome_no_run_took_is_recorded_as_refused(world: World) -> None:
    """A workflow terminated while its person was asked, and one that never existed."""
    async with running(world.worker(Ask), notifier := world.notifier()):
        handle = await world.start(Ask, {})
        asked = await world.created.next()
        await wait_for_event(handle, waiting)
        await handle.terminate("the trip was called off")
        await world.answer(asked, "alice", {"answer": "too late"})
        await notifier.wait_idle()
        never = await world.desk_handler.create(
            "choose",
            {"question": "First?"},
            room_id="room",
            actor_id="alice",
            channel_id="temporal",
            tool_call_id=f"temporal:1:{uuid.uuid4()}:wf-never-started",
        )
        assert await world.created.next() == never.pending_id
        await notifier.wait_idle()  # announced: its ending is owed from now on
        await world.desk_handler.aresolve(never.pending_id, "nobody reads this", by="alice")
        await notifier.wait_idle()
    terminated = delivered(await world.desk_handler.history(asked))
    assert [(e["accepted"], e.get("taken_by")) for e in terminated] == [(False, None)]
    assert terminated[0]["refused"] == "the workflow ended (terminated) before it took the answer"
    unknown = delivered(await world.desk_handler.history(never.pending_id))
    assert [(e["accepted"], e.get("taken_by")) for e in unknown] == [(False, None)]
    assert "not found" in str(unknown[0]["refused"])


async def test_temporal_stopped_while_a_person_answers(world: World) -> None:
    async with running(world.worker(Ask), world.notifier()):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        world.server.stop()
        try:
            answered = await world.answer(pending_id, "alice", {"answer": "Hotel C"})
        finally:
            world.server.start()
        result = await handle.result()
    assert answered.status_code == 200
    assert result == {"answer": "Hotel C"}
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [entry["accepted"] for entry in entries] == [True]


async def test_a_worker_killed_between_create_and_settle_resumes_once(world: World) -> None:
    async with worker_process(world) as process:
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        process.kill()  # SIGKILL: the worker dies between the create and the settle
        await process.wait()
        answered = await world.answer(pending_id, "alice", {"answer": "Hotel D"})
        async with running(world.worker(Ask), world.notifier()):
            result = await handle.result()
    assert answered.status_code == 200
    assert result == {"answer": "Hotel D"}
    mine = [
        request
        for request in await world.desk_handler.list_settled()
        if request.tool_call_id.endswith(f":{handle.id}")
    ]
    assert [request.pending_id for request in mine] == [pending_id]
    assert await updates_taken(handle) == [update_id_of(pending_id)]


@pytest.mark.parametrize("rpc_timeout", [-1.0, 0, math.nan, math.inf, 1e300, "10", True])
async def test_an_rpc_timeout_no_update_call_can_take_is_refused_at_once(
    temporal_server: TemporalServer, rpc_timeout: object
) -> None:
    """Not taken, then every delivery failing and retried for a week."""
    client = await Client.connect(temporal_server.address)
    with pytest.raises((TypeError, ValueError), match="rpc_timeout is"):
        TemporalUpdates(client, rpc_timeout=rpc_timeout)  # type: ignore[arg-type]


async def test_a_huge_value_refused_as_an_rpc_timeout_is_quoted_cut_short(
    temporal_server: TemporalServer,
) -> None:
    client = await Client.connect(temporal_server.address)
    with pytest.raises(TypeError, match="rpc_timeout is a number of seconds") as refused:
        TemporalUpdates(client, rpc_timeout="1" * 1_000_000)  # type: ignore[arg-type]
    assert len(str(refused.value)) < 200


@pytest.mark.parametrize(
    ("name", "error", "said"),
    [
        ("t" * 257, ValueError, "257 characters, over the 256"),
        ("temporal\ud800", InvalidTextError, "UTF-8"),
        (7, TypeError, "a str"),
    ],
)
async def test_a_name_no_history_keeps_as_a_surface_is_refused_at_once(
    temporal_server: TemporalServer, name: object, error: type[Exception], said: str
) -> None:
    """Refused when the surface is made, as a settle's surface is, not recorded later."""
    client = await Client.connect(temporal_server.address)
    with pytest.raises(error, match=rf"TemporalUpdates\(name=\.\.\.\).*{said}"):
        TemporalUpdates(client, name=name)  # type: ignore[arg-type]
    assert TemporalUpdates(client, name="t" * 256).name == "t" * 256


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
async def test_an_answer_past_temporals_payload_limit_comes_as_a_refusal_saying_so(
    world: World,
) -> None:
    """An answer given through the in-process API, larger than Temporal carries: the
    workflow resumes (a refusal naming the size), instead of failing each task for ever."""
    answer = "x" * 2_200_000
    async with running(world.worker(Ask), notifier := world.notifier()):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        assert await world.desk_handler.aresolve(pending_id, answer, by="alice")
        result = await result_or_task_failure(handle)
        await notifier.wait_idle()
    assert result["error"] == "HumanInputRejectedError", result
    assert f"{pending_id} is 2200" in result["message"]
    assert "past the 2080768 Temporal carries into a workflow" in result["message"]
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    assert request.result == answer, "the answer stays in the store"
    entries = delivered(await world.desk_handler.history(pending_id))
    assert [e["accepted"] for e in entries] == [True]

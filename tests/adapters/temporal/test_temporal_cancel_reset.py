"""A workflow cancelled, or reset, while a person is asked: a cancel withdraws the
question; a reset run re-attaches to its question and receives its answer, unless the code
it runs now asks about other arguments, which no earlier answer answers."""

from __future__ import annotations

import uuid

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import (
    Client,
    DescribeWorkflowInput,
    Interceptor,
    OutboundInterceptor,
    WorkflowExecutionDescription,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError, RPCStatusCode
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.history import wait_for_event, waiting
from tests.adapters.temporal.workflows import Ask, TransferAfter, TransferBefore

from roomkit.adapters.temporal import UPDATE_NAME, TemporalUpdates, update_id_of
from roomkit.models.pending_input import PendingInputStatus, arguments_digest
from roomkit.notify import DeliveryError, Notice

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


async def reset_to_start(world: World, handle: WorkflowHandle) -> WorkflowHandle:
    """Reset the workflow to its first workflow task, as ``temporal workflow reset --type
    FirstWorkflowTask`` does; the handle of the new run."""
    first_task = None
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            first_task = event.event_id
            break
    assert first_task is not None
    described = await handle.describe()
    reset = await world.client.workflow_service.reset_workflow_execution(
        ResetWorkflowExecutionRequest(
            namespace=world.client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=handle.id, run_id=described.run_id),
            reason="a fix deployed",
            workflow_task_finish_event_id=first_task,
            request_id=uuid.uuid4().hex,
        )
    )
    return world.client.get_workflow_handle(handle.id, run_id=reset.run_id)


async def test_a_cancelled_workflow_withdraws_its_question(world: World) -> None:
    async with running(world.worker(Ask), world.notifier()):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        answered = await world.answer(pending_id, "alice", {"answer": "too late"})
    assert isinstance(failed.value.cause, CancelledError)
    request = await world.desk_handler.get_request(pending_id)
    assert request is not None
    assert (request.status, request.withdrawn) == (PendingInputStatus.REJECTED, True)
    assert await world.desk_handler.list_pending() == []
    assert answered.status_code == 409, answered.text


@SQLITE_ONLY
@pytest.mark.parametrize("workflow_id", [None, '"' * 1_000], ids=["id", "id-long-as-json"])
async def test_a_reset_run_receives_the_answer_to_its_question_at_once(
    world: World, workflow_id: str | None
) -> None:
    """A workflow id JSON writes twice as long too: the ask's key is kept by its digest."""
    async with running(world.worker(TransferBefore, max_cached_workflows=0), world.notifier()):
        handle = await world.start(TransferBefore, id=workflow_id)
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        reset = await reset_to_start(world, handle)
        await wait_for_event(reset, waiting)
        await world.answer(pending_id, "alice", {"answer": "yes"})
        assert await reset.result() == {"answer": "yes"}
    delivered = [
        e for e in await world.desk_handler.history(pending_id) if e["type"] == "delivered"
    ]
    assert [entry["accepted"] for entry in delivered] == [True]


class DescribeFailsOnce(Interceptor):
    """The first describe of a workflow fails as Temporal's client fails a call once its
    own retries give up on an unreachable server (the SDK's own interceptors)."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _DescribeFailsOnce(next)


class _DescribeFailsOnce(OutboundInterceptor):
    failed = False

    async def describe_workflow(self, input: DescribeWorkflowInput) -> WorkflowExecutionDescription:
        if not self.failed:
            self.failed = True
            raise RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b"")
        return await super().describe_workflow(input)


@SQLITE_ONLY
async def test_an_answer_for_a_reset_run_is_retried_when_temporal_cannot_say_which_run_asks(
    world: World,
) -> None:
    """The run that asked ended at the reset; Temporal went away as the surface looked for
    the run in its place: the delivery is retried, not recorded as refused."""
    async with running(world.worker(TransferBefore, max_cached_workflows=0)):
        handle = await world.start(TransferBefore)
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        reset = await reset_to_start(world, handle)
        await wait_for_event(reset, waiting)
        await world.answer(pending_id, "alice", {"answer": "yes"})
        client = await Client.connect(world.server.address, interceptors=[DescribeFailsOnce()])
        surface = TemporalUpdates(client)
        surface.bind_handler(world.desk_handler)
        request = await world.desk_handler.get_request(pending_id)
        assert request is not None
        notice = Notice("question_settled", f"{pending_id}.settle.temporal.-", request)
        with pytest.raises(DeliveryError, match="Temporal is unreachable") as unreachable:
            await surface.send(notice)
        receipt = await surface.send(notice)
        result = await reset.result()
    assert unreachable.value.retry
    assert receipt == {"update_id": update_id_of(pending_id), "workflow_id": handle.id}
    assert result == {"answer": "yes"}
    delivered = [
        e for e in await world.desk_handler.history(pending_id) if e["type"] == "delivered"
    ]
    assert [(e["accepted"], e.get("refused")) for e in delivered] == [(True, None)]


@SQLITE_ONLY
async def test_an_outcome_a_reset_runs_create_took_is_recorded_as_taken(world: World) -> None:
    """The person answered while no notifier ran; then a reset run's create re-attached to
    the settled request and the run ended before the notifier's update came. The run that
    asked ended at the reset, and the run now in its place took the outcome: taken, by
    ``create``."""
    async with running(world.worker(TransferBefore, max_cached_workflows=0)):
        handle = await world.start(TransferBefore)
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        await world.answer(pending_id, "alice", {"answer": "yes"})
        reset = await reset_to_start(world, handle)
        assert await reset.result() == {"answer": "yes"}
    async with running(notifier := world.notifier()):
        await notifier.wait_idle()
    delivered = [
        e for e in await world.desk_handler.history(pending_id) if e["type"] == "delivered"
    ]
    assert [(e["accepted"], e.get("taken_by"), e.get("refused")) for e in delivered] == [
        (True, "create", None)
    ]


@SQLITE_ONLY
async def test_a_reset_run_asking_about_other_arguments_is_not_given_the_old_answer(
    world: World,
) -> None:
    async with running(world.worker(TransferBefore, max_cached_workflows=0), world.notifier()):
        handle = await world.start(TransferBefore)
        pending_id = await world.created.next()
        await world.answer(pending_id, "alice", {"answer": "yes"})
        assert await handle.result() == {"answer": "yes"}
    reset = await reset_to_start(world, handle)
    async with running(world.worker(TransferAfter, max_cached_workflows=0)):
        result = await reset.result()
    assert result["error"] == "ValueError", result
    assert "a question about other arguments" in result["message"]


@SQLITE_ONLY
async def test_approvers_given_as_one_string_are_refused(world: World) -> None:
    async with running(world.worker(Ask)):
        result = await (await world.start(Ask, {"approvers": "bob"})).result()
    assert result["error"] == "ValueError"
    assert "approvers is a list of actor ids" in result["message"]
    assert await world.desk_handler.list_pending() == []


@SQLITE_ONLY
async def test_an_update_with_no_outcome_in_it_is_refused(world: World) -> None:
    """Someone with access to Temporal sends a made-up status, or ``seq: true``: refused by
    the validator, and the person's real answer still reaches the workflow."""
    digest = arguments_digest("choose", {"question": "Which hotel?"})
    async with running(world.worker(Ask), world.notifier()):
        handle = await world.start(Ask, {})
        pending_id = await world.created.next()
        await wait_for_event(handle, waiting)
        forged = {"pending_id": pending_id, "digest": digest, "result": "forged"}
        for fields in ({"seq": 1, "status": "bogus"}, {"seq": True, "status": "resolved"}):
            with pytest.raises(WorkflowUpdateFailedError):
                await handle.execute_update(UPDATE_NAME, {**forged, **fields})
        await world.answer(pending_id, "alice", {"answer": "Hotel Lisboa"})
        assert await handle.result() == {"answer": "Hotel Lisboa"}

"""The first ask of a run continued as new goes back through the runs before it that asked
nothing: it reads each one's history once, and asks Temporal nothing else about them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from temporalio.client import (
    Client,
    DescribeWorkflowInput,
    FetchWorkflowHistoryEventsInput,
    Interceptor,
    OutboundInterceptor,
    WorkflowExecutionDescription,
    WorkflowHistoryEventAsyncIterator,
)
from temporalio.worker import Worker
from tests.adapters.temporal.conftest import World
from tests.adapters.temporal.workflows import ContinueThenAsk

from roomkit.adapters.temporal import activities

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


class Reads(Interceptor):
    """The describes and history reads a client makes, with the run each is of (the SDK's
    own client interception)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Counting(next, self.calls)


class _Counting(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, calls: list[tuple[str, str | None]]) -> None:
        super().__init__(next)
        self.calls = calls

    async def describe_workflow(self, input: DescribeWorkflowInput) -> WorkflowExecutionDescription:
        self.calls.append(("describe", input.run_id))
        return await super().describe_workflow(input)

    def fetch_workflow_history_events(
        self, input: FetchWorkflowHistoryEventsInput
    ) -> WorkflowHistoryEventAsyncIterator:
        self.calls.append(("history", input.run_id))
        return super().fetch_workflow_history_events(input)


def counted(client: Client, reads: Reads) -> Client:
    """``client`` again, its calls counted by ``reads``."""
    config: Any = client.config()
    config["interceptors"] = [*config.get("interceptors", ()), reads]
    return Client(**config)


@SQLITE_ONLY
async def test_runs_that_asked_nothing_are_each_read_once(world: World) -> None:
    reads = Reads()
    worker = Worker(
        counted(world.client, reads),
        task_queue=world.task_queue,
        workflows=[ContinueThenAsk],
        activities=activities(world.worker_handler),
    )
    async with worker:
        handle = await world.start(ContinueThenAsk, 5)
        await world.created.next()
        calls = list(reads.calls)
        await handle.terminate("asked")
    assert {kind for kind, _ in calls} == {"history"}, calls
    per_run = Counter(run_id for _, run_id in calls)
    assert len(per_run) == 5, "each run before the one that asks"
    assert set(per_run.values()) == {1}, calls

"""Two namespaces on one store: each request says which namespace its workflow runs in, and
a surface delivers only its own namespace's, leaving the others' to theirs."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from temporalio.client import Client
from temporalio.worker import Worker
from tests.adapters.temporal.conftest import World, running
from tests.adapters.temporal.temporal_server import OTHER_NAMESPACE, TemporalServer
from tests.adapters.temporal.workflows import Ask

from roomkit.adapters.temporal import TemporalUpdates, activities
from roomkit.models.pending_input import PendingInputStatus
from roomkit.notify import Notifier, Retry

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


def surface(client: Client, name: str) -> TemporalUpdates:
    return TemporalUpdates(client, retry=Retry(first=0.05, cap=0.5), rpc_timeout=5.0, name=name)


@SQLITE_ONLY
async def test_a_surface_leaves_another_namespaces_requests_to_that_namespaces_surface(
    world: World, temporal_server: TemporalServer
) -> None:
    """The same workflow id asks in both namespaces; an answer to one reaches it, the other
    namespace's surface skips it (it refused it, finding no such run in its namespace), and
    the other namespace's question stays open."""
    other = await Client.connect(temporal_server.address, namespace=OTHER_NAMESPACE)
    there = Worker(
        other,
        task_queue=world.task_queue,
        workflows=[Ask],
        activities=activities(world.handler()),
    )
    both = [surface(world.client, "temporal"), surface(other, "temporal-other")]
    notifier = Notifier(world.handler(), both, poll=0.2)
    workflow_id = f"wf-{uuid.uuid4().hex[:8]}"
    async with running(world.worker(Ask), there, notifier):
        handle = await world.start(Ask, {}, id=workflow_id)
        mine = await world.created.next()
        elsewhere = await other.start_workflow(
            Ask.run, {}, id=workflow_id, task_queue=world.task_queue
        )
        theirs = await world.created.next()
        answered = await world.answer(mine, "alice", {"answer": "Hotel H"})
        result = await handle.result()
        await notifier.wait_idle()
        dropped = Counter(notifier.statistics().dropped)
        await elsewhere.terminate("done")
    assert answered.status_code == 200, answered.text
    assert result == {"answer": "Hotel H"}
    assert dropped == Counter(), "no surface refused a request of another namespace"
    history = await world.desk_handler.history(mine)
    delivered = [entry for entry in history if entry["type"] == "delivered"]
    assert [(e["accepted"], e["surface"]) for e in delivered] == [(True, "temporal")]
    request = await world.desk_handler.get_request(theirs)
    assert request is not None
    assert request.status is PendingInputStatus.PENDING
    assert request.tool_call_id.startswith("temporal:1:")
    assert request.tool_call_id.endswith(f"@{OTHER_NAMESPACE}:{workflow_id}")

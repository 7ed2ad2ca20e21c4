"""Workflow runs that have ended: what one's history says about an outcome, and the
requests of a run that no run will take an answer to any more.

An outcome's update can find the run that asked already ended, and still the run may have
taken the outcome: by this very update, before it ended (a delivery repeated after the
workflow returned), or by reading it from the store itself. Its own timer fired and the
expire activity returned it, or the create activity re-attached the ask to a request already
settled; the workflow then ended before the update came. The run's history tells which: an
accepted update with the outcome's id, or one of roomkit's activities completing with this
request's outcome, followed by a workflow task that completed (the workflow code read it).

A run that ended (terminated, timed out, ...) while its requests were open, with no run in
its place (a reset's) that re-attaches to them, takes none of their answers (a retry, or a
run continued as new, asks afresh):
they are withdrawn, saying how the run ended, when an answer comes (:func:`check_run`, the
handler's answer check), when a delivery finds the run ended (:func:`withdraw_ended`), or
when the first ask of a retry or of a run continued as new is made
(:func:`withdraw_earlier_runs`). A run's requests are read by id, the ids its create
activities returned as its history says, never by listing every open request of the store.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from roomkit.adapters.temporal._protocol import (
    CREATE_ACTIVITY,
    EXPIRE_ACTIVITY,
    Origin,
    elsewhere,
    origin_of,
)
from roomkit.core.exceptions import StoreError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

__all__ = [
    "BY_UPDATE",
    "HOW_ENDED",
    "check_run",
    "stands_in",
    "taken_by",
    "withdraw_earlier_runs",
    "withdraw_ended",
]

logger = logging.getLogger("roomkit.adapters.temporal")

HOW_ENDED = {
    WorkflowExecutionStatus.COMPLETED: "ended (completed)",
    WorkflowExecutionStatus.FAILED: "ended (failed)",
    WorkflowExecutionStatus.CANCELED: "was cancelled",
    WorkflowExecutionStatus.TERMINATED: "ended (terminated)",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "continued as new",
    WorkflowExecutionStatus.TIMED_OUT: "ended (timed out)",
}
"""How a run that ended did, as a refusal or a withdrawal says it."""

CHECK_WITHIN = 2.0
"""Seconds an answer waits at most to learn whether its run still runs: past it the answer goes
on, and its delivery tells (a slow Temporal never stands between a person and a request)."""

BY_UPDATE = "update"
"""The run took the outcome's update."""

_READERS = {EXPIRE_ACTIVITY: "timer", CREATE_ACTIVITY: "create"}
"""roomkit's activities that return an outcome, by what took it when one did: the workflow's
timer (the expire activity), or the ask's create activity (a request already settled)."""


async def taken_by(
    client: Client, origin: Origin, update_id: str, outcome: dict[str, Any]
) -> str | None:
    """How the ended run ``origin`` took ``outcome`` (whose update is ``update_id``):
    :data:`BY_UPDATE`, ``"timer"``, ``"create"``; ``None`` when its history says it did not,
    or Temporal keeps no such run.

    Raises:
        RPCError: the history cannot be read for now (Temporal unreachable, the client's
            retries given up): nothing is known of what the run took.
    """
    handle = client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
    reading: dict[int, str] = {}  # the scheduled event of each of roomkit's activities
    read: str | None = None  # an activity returned the outcome; the workflow may not have run
    try:
        async for event in handle.fetch_history_events():
            if event.HasField("workflow_execution_update_accepted_event_attributes"):
                accepted = event.workflow_execution_update_accepted_event_attributes
                if accepted.accepted_request.meta.update_id == update_id:
                    return BY_UPDATE
            elif event.HasField("activity_task_scheduled_event_attributes"):
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                if name in _READERS:
                    reading[event.event_id] = _READERS[name]
            elif event.HasField("activity_task_completed_event_attributes"):
                completed = event.activity_task_completed_event_attributes
                reader = reading.get(completed.scheduled_event_id)
                if reader is not None and read is None:
                    result = await _decoded(client, list(completed.result.payloads))
                    if _same(result, outcome):
                        read = reader
            elif read is not None and event.HasField("workflow_task_completed_event_attributes"):
                return read
    except RPCError as error:
        if error.status is not RPCStatusCode.NOT_FOUND:
            raise  # not an answer: the delivery is tried again, not refused on a guess
        return None
    return None


async def _decoded(client: Client, payloads: list[Any]) -> Any:
    """An activity's result as the client's data converter reads it; ``None`` if it cannot."""
    if len(payloads) != 1:
        return None
    try:
        [value] = await client.data_converter.decode(payloads, [dict])
    except Exception:
        return None
    return value


def _same(result: Any, outcome: dict[str, Any]) -> bool:
    """Whether an activity's ``result`` is ``outcome``: the same request, settled the same way
    (a request settles once, so any read of it settled gives the one outcome)."""
    return (
        isinstance(result, dict)
        and result.get("pending_id") == outcome["pending_id"]
        and result.get("status") == outcome["status"]
    )


def unanswered(ended: str) -> str:
    """The reason an open request of a run that ``ended`` (as :data:`HOW_ENDED` says it)
    is withdrawn with."""
    return f"the workflow {ended} before it was answered"


async def run_ended(client: Client, origin: Origin) -> str | None:
    """How the run ``origin`` ended (as :data:`HOW_ENDED` says it), when no run of its
    chain runs now that re-attaches to its requests; ``None`` while it runs, or a run in its
    place does (a reset's), or Temporal keeps no such run. A retry and a run continued as
    new start their asks afresh: they take none of the ended run's answers.

    Raises:
        RPCError: Temporal cannot be reached for now: nothing is known of the run.
    """
    handle = client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
    try:
        described = await handle.describe()
        ended = None if described.status is None else HOW_ENDED.get(described.status)
        if ended is None:
            return None
        first = described.raw_description.workflow_execution_info.first_run_id
        latest = await client.get_workflow_handle(origin.workflow_id).describe()
        same_chain = latest.raw_description.workflow_execution_info.first_run_id == first
        if (
            same_chain
            and latest.status is WorkflowExecutionStatus.RUNNING
            and await stands_in(client, origin, latest.run_id)
        ):
            return None
    except RPCError as error:
        if error.status is not RPCStatusCode.NOT_FOUND:
            raise
        return None
    return ended


async def stands_in(client: Client, origin: Origin, run_id: str) -> bool:
    """Whether the run ``run_id``, of the chain of the run ``origin``, re-attaches to the
    requests ``origin`` made: an ask's key holds the run its run continues (and the chain's
    first run), which a reset's run keeps and a retry's, or a run continued as new, does not.

    Raises:
        RPCError: either run's history cannot be read for now.
    """
    if run_id == origin.run_id:
        return True
    return await _continues(client, origin.workflow_id, run_id) == await _continues(
        client, origin.workflow_id, origin.run_id
    )


async def _continues(client: Client, workflow_id: str, run_id: str) -> str:
    """The run the run ``run_id`` continues, as its start says (``""`` for none)."""
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    async for event in handle.fetch_history_events(page_size=1):
        return str(event.workflow_execution_started_event_attributes.continued_execution_run_id)
    return ""


async def withdraw_run(
    client: Client,
    handler: HumanInputHandler,
    origin: Origin,
    reason: str,
) -> None:
    """Withdraw every open request the run ``origin`` made, with ``reason``: those its
    create activities returned (read by id: the open requests of other workflows are not
    read). A history Temporal does not give within :data:`CHECK_WITHIN` leaves the run's
    requests to their own answer checks (which withdraw the request answered, whether or
    not the run heard of its create).

    Raises:
        StoreError: the store cannot be reached for now; the rest stay open.
    """
    try:
        async with asyncio.timeout(CHECK_WITHIN):
            _, made, _ = await _asks_of(client, origin)
    except (RPCError, TimeoutError) as error:
        logger.warning("could not read which requests run %s made: %s", origin, error)
        made = []
    for request in await _open(handler, made):  # a check-and-set: one settled meanwhile stays
        await handler.arelease(request.pending_id, reason=reason)


async def withdraw_earlier_runs(
    client: Client, handler: HumanInputHandler, origin: Origin, continues: str
) -> None:
    """Withdraw the open requests of the runs before ``origin`` (which continues the run
    ``continues``: a retry, or a run continued as new) that ended with no run in their
    place, saying how each ended: ``origin``'s first ask asks afresh, and a person sees one
    question for one pause.

    Each run's requests are read by id, the ids its create activities returned (as its
    history says): the open requests of other workflows are not read. The runs are gone
    back through while they asked nothing (a run that asked withdrew those before it with
    its first ask), one history read each: how a run ended is asked of Temporal only for a
    run with a request still open. What Temporal does not tell within :data:`CHECK_WITHIN`
    is logged, and left to the answer check, as is a request whose create the run ended
    before it heard of.

    Raises:
        StoreError: the store cannot be reached for now (the ask's create is retried).
    """
    run_id = continues
    while run_id:
        earlier = Origin(origin.workflow_id, run_id, origin.seq, origin.namespace)
        try:
            async with asyncio.timeout(CHECK_WITHIN):
                asked, made, run_id = await _asks_of(client, earlier)
        except (RPCError, TimeoutError) as error:
            logger.warning("could not read which requests run %s made: %s", earlier, error)
            return
        still_open = [request.pending_id for request in await _open(handler, made)]
        if still_open:
            try:
                async with asyncio.timeout(CHECK_WITHIN):
                    ended = await run_ended(client, earlier)
            except (RPCError, TimeoutError) as error:
                logger.warning("could not learn whether run %s ended: %s", earlier, error)
                return
            if ended is not None:
                for pending_id in still_open:  # a check-and-set: one settled meanwhile stays
                    await handler.arelease(pending_id, reason=unanswered(ended))
        if asked:
            return


async def _open(handler: HumanInputHandler, pending_ids: list[str]) -> list[PendingInput]:
    """The requests of ``pending_ids`` that are still open (none read when there are none)."""
    if not pending_ids:
        return []
    requests = [await handler.get_request(pending_id) for pending_id in pending_ids]
    return [r for r in requests if r is not None and r.status is PendingInputStatus.PENDING]


async def _asks_of(client: Client, origin: Origin) -> tuple[bool, list[str], str]:
    """What the run ``origin`` asked, as its history says: whether it scheduled a create
    activity, the ids of the requests its create activities returned, and the run it
    continues (``""`` for none).

    Raises:
        RPCError: the history cannot be read for now.
    """
    handle = client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
    creates: set[int] = set()  # the scheduled events of its create activities
    made: list[str] = []
    continues = ""
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_execution_started_event_attributes"):
            started = event.workflow_execution_started_event_attributes
            continues = str(started.continued_execution_run_id)
        elif event.HasField("activity_task_scheduled_event_attributes"):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name == CREATE_ACTIVITY:
                creates.add(event.event_id)
        elif event.HasField("activity_task_completed_event_attributes"):
            completed = event.activity_task_completed_event_attributes
            if completed.scheduled_event_id in creates:
                result = await _decoded(client, list(completed.result.payloads))
                if isinstance(result, dict) and isinstance(result.get("pending_id"), str):
                    made.append(result["pending_id"])
    return bool(creates), made, continues


async def check_run(
    client: Client, handler: HumanInputHandler, request: PendingInput
) -> str | None:
    """The answer check of ``handler`` (``add_answer_check``): ``None`` while the run that
    made ``request`` (a workflow's) may take an answer, or Temporal cannot tell for now;
    else the reason every open request of the run is withdrawn with, as they are."""
    origin = origin_of(request)
    if origin is None or elsewhere(origin, client.namespace):
        return None  # another namespace's surface checks it
    try:
        async with asyncio.timeout(CHECK_WITHIN):
            ended = await run_ended(client, origin)
    except (RPCError, TimeoutError) as error:
        logger.debug("whether run %s ended is unknown (%s): the answer goes on", origin, error)
        return None
    if ended is None:
        return None
    reason = unanswered(ended)
    await withdraw_run(client, handler, origin, reason)
    return reason


async def withdraw_ended(client: Client, handler: HumanInputHandler, origin: Origin) -> None:
    """Withdraw the open requests of the run ``origin``, which a delivery found ended, when
    no run of its chain runs now; what cannot be learned or withdrawn for now is logged."""
    try:
        ended = await run_ended(client, origin)
        if ended is not None:
            await withdraw_run(client, handler, origin, unanswered(ended))
    except (RPCError, StoreError) as error:
        logger.warning("could not withdraw the open requests of %s: %s", origin, error)

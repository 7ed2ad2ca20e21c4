"""The notifier surface that delivers each outcome of a workflow's requests as an update.

``Notifier(handler, [TemporalUpdates(client)])`` (beside the worker, in the desk's process, or
on its own) follows every settle through the store's outbox, so an answer given anywhere
(the desk, Slack, an email link, the CLI, another process) reaches the workflow that asked:

- the update's id is derived from the settle (``roomkit-settle-<pending_id>``): the server
  answers a repeated id with the first update's result, so a delivery repeated after a
  restart reaches the workflow once;
- while Temporal cannot be reached the delivery is retried on :attr:`retry`'s schedule;
- the workflow's validator may refuse it (another request, other arguments, an ask already
  settled): the refusal is recorded and not retried;
- what became of it is in the request's history as a ``delivered`` entry (``accepted``
  true, or false with what ``refused`` it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from roomkit.adapters.temporal._protocol import UPDATE_NAME, Origin, origin_of, outcome_of
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Notice, Person
from roomkit.stores import new_entry
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["TemporalUpdates", "update_id_of"]

logger = logging.getLogger("roomkit.adapters.temporal")

_GONE = frozenset({RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION})
"""What the server says of a workflow that has ended or never existed."""


def update_id_of(pending_id: str) -> str:
    """The id of the update that delivers the outcome of ``pending_id``."""
    return f"roomkit-settle-{pending_id}"


class TemporalUpdates:
    """Deliver the outcome of every request a workflow made, once, as an update.

    Args:
        client: a connected ``temporalio.client.Client`` (its namespace is the workflows').
        retry: when to try again while Temporal is unreachable; by default the first retry
            within a second, then doubling up to 30 s, for a week.
        rpc_timeout: seconds one update call may take (a worker must take it meanwhile).
        name: the surface's name, recorded in histories.
    """

    def __init__(
        self,
        client: Client,
        *,
        retry: Retry | None = None,
        rpc_timeout: float = 10.0,
        name: str = "temporal",
    ) -> None:
        if not isinstance(client, Client):
            raise TypeError(
                f"TemporalUpdates takes a temporalio.client.Client, got {type(client).__name__}: "
                "await Client.connect('localhost:7233') first"
            )
        self.client = client
        self.name = name
        self.retry = retry if retry is not None else Retry(give_up=7 * 86_400.0)
        self.rpc_timeout = timedelta(seconds=rpc_timeout)
        self._handler: HumanInputHandler | None = None

    def bind_handler(self, handler: HumanInputHandler) -> None:
        """Called by the notifier: where the ``delivered`` entries are recorded."""
        self._handler = handler

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """It tells the workflow, no one in particular."""
        return recipient is None

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Deliver a workflow request's outcome; anything else is skipped (its receipt says
        so, and the request's history records no ``shown``)."""
        request = notice.request
        origin = origin_of(request)
        if notice.type != "question_settled" or origin is None:
            return {"skipped": "only a workflow request's outcome goes to Temporal"}
        update_id = update_id_of(request.pending_id)
        receipt = {"update_id": update_id, "workflow_id": origin.workflow_id}
        history = [] if self._handler is None else await self._handler.history(request.pending_id)
        if any(e.get("type") == "delivered" and e.get("update_id") == update_id for e in history):
            return receipt  # delivered and recorded by a notifier that stopped before its end
        outcome = outcome_of(request, _digest(request, history))
        handle = self.client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
        try:
            await handle.execute_update(
                UPDATE_NAME, outcome, id=update_id, rpc_timeout=self.rpc_timeout
            )
        except WorkflowUpdateFailedError as error:
            await self._refused(request, origin, update_id, _reason(error))
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            raise DeliveryError(
                f"workflow {origin.workflow_id!r} took no update within "
                f"{self.rpc_timeout.total_seconds():g}s: is a worker running?",
                retry=True,
            ) from None
        except RPCError as error:
            if error.status not in _GONE:
                raise DeliveryError(f"Temporal is unreachable: {error}", retry=True) from None
            if not await self._taken(origin, update_id):
                await self._refused(request, origin, update_id, f"the workflow {error.message}")
        await self._record(request.pending_id, origin, update_id, accepted=True)
        return receipt

    async def aclose(self) -> None:
        """The client is the caller's: nothing to close."""

    # -- what the workflow and the history say -----------------------------------------------

    async def _taken(self, origin: Origin, update_id: str) -> bool:
        """Whether the ended run took the update ``update_id`` before it ended (a delivery
        repeated after the workflow returned)."""
        handle = self.client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
        try:
            async for event in handle.fetch_history_events():
                accepted = event.workflow_execution_update_accepted_event_attributes
                if accepted.accepted_request.meta.update_id == update_id:
                    return True
        except RPCError:
            return False
        return False

    async def _refused(
        self, request: PendingInput, origin: Origin, update_id: str, reason: str
    ) -> None:
        await self._record(request.pending_id, origin, update_id, accepted=False, refused=reason)
        raise DeliveryError(
            f"workflow {origin.workflow_id!r} refused the outcome of {request.pending_id}: "
            f"{reason}",
            retry=False,
        )

    async def _record(self, pending_id: str, origin: Origin, update_id: str, **fields: Any) -> None:
        if self._handler is None:
            return
        entry = new_entry(
            "delivered",
            surface=self.name,
            update_id=update_id,
            workflow_id=origin.workflow_id,
            run_id=origin.run_id,
            **fields,
        )
        try:
            await self._handler.record(pending_id, entry)
        except Exception as error:
            # The delivery stands; only its record is missing.
            logger.warning("could not record the delivery of %s: %s", pending_id, error)


def _digest(request: PendingInput, history: list[dict[str, Any]]) -> str:
    """The digest of the arguments the workflow asked about: the ``created`` entry's (an
    approval's arguments change with an edit; what was asked does not)."""
    for entry in history:
        if entry.get("type") == "created" and isinstance(entry.get("digest"), str):
            return str(entry["digest"])
    return arguments_digest(request.tool_name, request.arguments)


def _reason(error: WorkflowUpdateFailedError) -> str:
    cause = error.cause
    return str(getattr(cause, "message", None) or cause or error)

"""The notifier surface that delivers each outcome of a workflow's requests as an update.

``Notifier(handler, [TemporalUpdates(client)])`` (beside the worker, in the desk's process, or
on its own) follows every settle through the store's outbox, so an answer given anywhere
(the desk, Slack, an email link, the CLI, another process) reaches the workflow that asked:

- the update's id is derived from the settle (``roomkit-settle-<pending_id>``): the server
  answers a repeated id with the first update's result, so a delivery repeated after a
  restart reaches the workflow once;
- while Temporal cannot be reached, or the run still runs but takes no update for now (its
  workflow task keeps failing on the workers), the delivery is retried on :attr:`retry`'s
  schedule;
- the workflow's validator may refuse it (another request, other arguments, an ask already
  settled, an answer that came after the workflow's cancel), and a run that ended without
  taking it (terminated, timed out) cannot take it: the refusal is recorded, saying how
  the run ended, and not retried;
- what became of it is in the request's history as a ``delivered`` entry (``accepted``
  true, or false with what ``refused`` it), recorded once however many deliveries end
  (at most once: an entry whose append the store did not see through, which may still
  land, is left as it is, its claim spent);
- a run that ended (terminated, timed out) with no run in its place takes no answer: the
  surface checks the run before an answer settles a workflow's request on its handler
  (``add_answer_check``), and withdraws every open request of the run instead, saying how
  it ended; a delivery that finds the run ended withdraws them too;
- a workflow that read the outcome from the store itself (its timer fired, or its ask
  re-attached to a request already settled) and ended before the update came took it all
  the same: ``accepted`` true, and ``taken_by`` says how (``"timer"``, ``"create"``); so
  did the run a reset put in place of the one that asked, read from that run's history.

The surface also follows the handler's change feed: a workflow's request that settles is
sent at once, without waiting for the outbox's turn. The outbox's delivery of the same
settle stays as the durable retry. In one process the two share one update call: whichever
comes second waits for the first's and takes what it ended in (a call that failed in a way
worth retrying is not kept, so the outbox's retry makes a new one). Between processes the
update's id makes them one update, and a claim in the store's ledger one ``delivered``
entry.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import timedelta
from functools import partial
from typing import Any

from roomkit._extras import requires_extra

with requires_extra("roomkit.adapters.temporal", "temporal"):
    from temporalio.client import (
        Client,
        WorkflowExecutionStatus,
        WorkflowUpdateFailedError,
        WorkflowUpdateRPCTimeoutOrCancelledError,
    )
    from temporalio.service import RPCError, RPCStatusCode

from roomkit.adapters.temporal._ended import (
    BY_UPDATE,
    HOW_ENDED,
    check_run,
    taken_by,
    withdraw_ended,
)
from roomkit.adapters.temporal._protocol import (
    UPDATE_NAME,
    Origin,
    elsewhere,
    origin_of,
    outcome_of,
)
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.core.tasks import end_within
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.models.shown import shown
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Notice, Person, surface_name
from roomkit.stores import PendingChange, PendingChangeKind, new_entry
from roomkit.stores.outbox import now_of
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["TemporalUpdates", "update_id_of"]

logger = logging.getLogger("roomkit.adapters.temporal")

_GONE = frozenset({RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION})
"""What the server says of a workflow that has ended or never existed, and of a run that
takes no update for now (its workflow task keeps failing): the run's status tells which."""

_DELIVERED_KEEP = 7 * 86_400.0
"""Seconds the claim on a request's ``delivered`` entry is kept: past any retry of its
delivery."""

_FOLLOWING = 64
"""Deliveries the change feed may have in flight at once; past them a settle waits for a
free one (the outbox delivers it meanwhile if it comes first)."""

_LONGEST_CALL = 86_400.0
"""The most seconds one update call may be given: a day (a call waits for a worker to take
the update; a delivery that waits longer is retried anyway)."""

_GRACE = 1.0
"""Seconds the deliveries begun from the change feed get to end when the surface closes."""

_KEPT = 4_096
"""Deliveries whose end is kept, so that a later delivery of the same settle in this process
takes it instead of calling again: past the change feed's and the outbox's turns."""


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
        name: the surface's name, recorded in histories (at most 256 characters, as any
            surface's).

    Raises:
        TypeError: ``client`` is not a ``Client``, ``rpc_timeout`` is not a number, or
            ``name`` is not a ``str``.
        ValueError: ``rpc_timeout`` is not a positive, finite number of seconds, or ``name``
            is longer than a surface may be.
        InvalidTextError: ``name`` holds text UTF-8 cannot encode.
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
        if isinstance(rpc_timeout, bool) or not isinstance(rpc_timeout, int | float):
            raise TypeError(
                f"TemporalUpdates: rpc_timeout is a number of seconds, got {shown(rpc_timeout)}"
            )
        if not 0 < rpc_timeout <= _LONGEST_CALL:
            # The SDK takes no such timeout: every delivery would fail, and be retried.
            raise ValueError(
                "TemporalUpdates: rpc_timeout is the seconds one update call may take, more "
                f"than 0 and at most {_LONGEST_CALL:g} (10.0 by default), got {shown(rpc_timeout)}"
            )
        self.name = surface_name(name, what="TemporalUpdates(name=...)", example="temporal")
        self.client = client
        self.retry = retry if retry is not None else Retry(give_up=7 * 86_400.0)
        self.rpc_timeout = timedelta(seconds=rpc_timeout)
        self._handler: HumanInputHandler | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._unchecked: Callable[[], None] | None = None
        self._following: set[asyncio.Task[Any]] = set()
        self._room = asyncio.Semaphore(_FOLLOWING)
        self._sends: OrderedDict[str, asyncio.Task[dict[str, Any]]] = OrderedDict()

    def bind_handler(self, handler: HumanInputHandler) -> None:
        """Called by the notifier: where the ``delivered`` entries are recorded, whose
        change feed the surface follows to send an outcome as soon as its request settles,
        and whose answers to a workflow's request are checked first (``add_answer_check``):
        a run that ended withdraws its open requests instead of taking an answer."""
        for undo in (self._unsubscribe, self._unchecked):
            if undo is not None:
                undo()
        self._handler = handler
        self._unsubscribe = handler.subscribe(self._on_change)
        self._unchecked = handler.add_answer_check(partial(check_run, self.client, handler))

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
        if elsewhere(origin, self.client.namespace):
            # Its namespace's surface delivers it: this client would find no such run.
            return {"skipped": f"a request of Temporal namespace {origin.namespace!r}"}
        return await self._once(request, origin)

    async def aclose(self) -> None:
        """Stop following the change feed; what it began gets a moment to end (the outbox
        delivers the rest). The client is the caller's: it stays open."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        unchecked, self._unchecked = self._unchecked, None
        if unchecked is not None:
            unchecked()
        await end_within(set(self._following), _GRACE)

    # -- following the change feed ------------------------------------------------------------

    def _on_change(self, change: PendingChange) -> None:
        if change.kind is not PendingChangeKind.SETTLED or self._unsubscribe is None:
            return
        record = change.record
        if record is not None and origin_of(record) is None:
            return  # not a workflow's request: nothing to read
        try:
            task = asyncio.get_running_loop().create_task(
                self._follow(change.pending_id, record), name="roomkit-temporal-settled"
            )
        except RuntimeError:
            return  # no loop running here: the outbox delivers it
        self._following.add(task)
        task.add_done_callback(self._following.discard)

    async def _follow(self, pending_id: str, record: PendingInput | None) -> None:
        """Send the outcome of ``pending_id`` now; any fault leaves it to the outbox."""
        async with self._room:
            try:
                request = record
                if request is None and self._handler is not None:
                    request = await self._handler.get_request(pending_id)
                origin = None if request is None else origin_of(request)
                if request is None or origin is None or elsewhere(origin, self.client.namespace):
                    return
                await self._once(request, origin)
            except DeliveryError as error:
                logger.debug("%s is left to the outbox: %s", pending_id, error)
            except Exception:
                logger.exception("sending the outcome of %s failed; the outbox retries", pending_id)

    # -- one delivery -------------------------------------------------------------------------

    async def _once(self, request: PendingInput, origin: Origin) -> dict[str, Any]:
        """Deliver ``request``'s outcome, or take the end of this process's delivery of it
        begun or ended before (the change feed's, the outbox's)."""
        pending_id = request.pending_id
        sending = self._sends.get(pending_id)
        if sending is None or sending.cancelled():
            sending = asyncio.get_running_loop().create_task(
                self._deliver(request, origin), name="roomkit-temporal-update"
            )
            self._following.add(sending)
            sending.add_done_callback(self._following.discard)
            sending.add_done_callback(lambda task: self._ended(pending_id, task))
            self._sends[pending_id] = sending
            while len(self._sends) > _KEPT:
                self._sends.popitem(last=False)
        # Shielded: a caller that gives up leaves the call to the others waiting on it.
        return await asyncio.shield(sending)

    def _ended(self, pending_id: str, task: asyncio.Task[dict[str, Any]]) -> None:
        """Keep a delivery that ended for good (taken, or refused); forget one to retry."""
        error = None if task.cancelled() else task.exception()
        final = error is None or (isinstance(error, DeliveryError) and not error.retry)
        if (task.cancelled() or not final) and self._sends.get(pending_id) is task:
            del self._sends[pending_id]

    async def _deliver(self, request: PendingInput, origin: Origin) -> dict[str, Any]:
        update_id = update_id_of(request.pending_id)
        receipt = {"update_id": update_id, "workflow_id": origin.workflow_id}
        # Sent again however often: the server answers a repeated id with the first result.
        outcome = outcome_of(request, await self._digest(request))
        handle = self.client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
        try:
            await handle.execute_update(
                UPDATE_NAME, outcome, id=update_id, rpc_timeout=self.rpc_timeout
            )
        except WorkflowUpdateFailedError as error:
            await self._refused(request, origin, update_id, _reason(error))
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            raise self._unanswered(origin) from None
        except RPCError as error:
            if error.status not in _GONE:
                raise _unreachable(error) from None
            try:
                taken = await taken_by(self.client, origin, update_id, outcome)
            except RPCError as unread:
                raise _unreachable(unread) from None
            if taken is None:
                taken = await self._to_reset_run(origin, outcome, update_id, error.message)
            if taken is None:
                reason = await self._why_not_taken(origin, error.message)
                if self._handler is not None:
                    # No one takes an answer to the run's other open requests either.
                    await withdraw_ended(self.client, self._handler, origin)
                await self._refused(request, origin, update_id, reason)
            if taken != BY_UPDATE:
                # The workflow read this outcome from the store itself, then ended.
                await self._record(
                    request.pending_id, origin, update_id, accepted=True, taken_by=taken
                )
                return receipt
        await self._record(request.pending_id, origin, update_id, accepted=True)
        return receipt

    # -- what the workflow and the history say -----------------------------------------------

    def _unanswered(self, origin: Origin) -> DeliveryError:
        return DeliveryError(
            f"workflow {shown(origin.workflow_id)} took no update within "
            f"{self.rpc_timeout.total_seconds():g}s: is a worker running?",
            retry=True,
        )

    def _held(self, origin: Origin, refusal: str) -> DeliveryError:
        """A run still open that took no update for now (a workflow task that keeps failing,
        on a worker deployed with a bug or without the workflow): tried again, since a fixed
        worker lets the run take it."""
        return DeliveryError(
            f"workflow {shown(origin.workflow_id)} is running but takes no update for now "
            f"(Temporal: {refusal}): is its workflow task failing on the workers?",
            retry=True,
        )

    async def _to_reset_run(
        self, origin: Origin, outcome: dict[str, Any], update_id: str, refusal: str
    ) -> str | None:
        """Deliver ``outcome`` to the run that stands in the ended run's chain now (a reset
        puts a new run in place of the one that made the request, and re-attaches its ask
        to the same request); how that run took it: :data:`BY_UPDATE`, or, when it has
        ended too, as its history says (its create re-attached to the request settled
        meanwhile, or its timer read it); ``None`` when it did not. Any other run refuses
        an outcome that is not its own ask's. A run that asked and still runs, refusing the
        update all the same (``refusal``), has not ended: the delivery is retried."""
        ended = self.client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
        try:
            described = await ended.describe()
            if described.status is WorkflowExecutionStatus.RUNNING:
                raise self._held(origin, refusal)
            first = described.raw_description.workflow_execution_info.first_run_id
            if not first:
                return None
            current = self.client.get_workflow_handle(
                origin.workflow_id, first_execution_run_id=first
            )
            try:
                await current.execute_update(
                    UPDATE_NAME, outcome, id=update_id, rpc_timeout=self.rpc_timeout
                )
            except RPCError as error:
                if error.status not in _GONE:
                    raise _unreachable(error) from None
                return await self._taken_by_ended_chain(
                    origin, first, outcome, update_id, error.message
                )
        except RPCError as error:
            if error.status not in _GONE:
                # Nothing is known of the run yet: an answer is not refused on a guess.
                raise _unreachable(error) from None
            return None
        except WorkflowUpdateFailedError:
            return None
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            raise self._unanswered(origin) from None
        return BY_UPDATE

    async def _taken_by_ended_chain(
        self, origin: Origin, first: str, outcome: dict[str, Any], update_id: str, refusal: str
    ) -> str | None:
        """How the latest run of the chain begun by ``first``, ended too, took ``outcome``,
        when that run is not ``origin``'s (whose history was read already); else ``None``.

        Raises:
            RPCError: the run cannot be described, or its history read, for now.
            DeliveryError: that run still runs, and refused the update for now
                (``refusal``): retried.
        """
        latest = await self.client.get_workflow_handle(origin.workflow_id).describe()
        info = latest.raw_description.workflow_execution_info
        if info.first_run_id != first or latest.run_id == origin.run_id:
            return None  # another workflow under the same id, or no run in the ended one's place
        stand_in = Origin(origin.workflow_id, latest.run_id, origin.seq, origin.namespace)
        if latest.status is WorkflowExecutionStatus.RUNNING:
            raise self._held(stand_in, refusal)
        return await taken_by(self.client, stand_in, update_id, outcome)

    async def _why_not_taken(self, origin: Origin, refusal: str) -> str:
        """Why the ended run ``origin`` did not take its outcome, as its status says (a run
        terminated or timed out ran no more code); Temporal's ``refusal`` when it keeps no
        such run."""
        handle = self.client.get_workflow_handle(origin.workflow_id, run_id=origin.run_id)
        try:
            status = (await handle.describe()).status
        except RPCError as error:
            if error.status not in _GONE:
                raise _unreachable(error) from None
            status = None
        ended = None if status is None else HOW_ENDED.get(status)
        return (
            f"Temporal: {refusal}"
            if ended is None
            else f"the workflow {ended} before it took the answer"
        )

    async def _digest(self, request: PendingInput) -> str:
        """The digest of the arguments the workflow asked about: a question's arguments do
        not change, so its own; an approval's may have been edited, so its ``created``
        entry's."""
        if request.kind != "approval" or self._handler is None:
            return arguments_digest(request.tool_name, request.arguments)
        return _digest(request, await self._handler.history(request.pending_id))

    async def _refused(
        self, request: PendingInput, origin: Origin, update_id: str, reason: str
    ) -> None:
        await self._record(request.pending_id, origin, update_id, accepted=False, refused=reason)
        raise DeliveryError(
            f"workflow {shown(origin.workflow_id)} refused the outcome of {request.pending_id}: "
            f"{reason}",
            retry=False,
        )

    async def _record(self, pending_id: str, origin: Origin, update_id: str, **fields: Any) -> None:
        handler = self._handler
        if handler is None:
            return
        # Claimed once: the change feed and the outbox may both deliver one settle.
        claim = f"temporal-delivered:{pending_id}"
        try:
            if not await handler.ledger.spend_once(claim, until=now_of(handler) + _DELIVERED_KEEP):
                return
        except Exception as error:
            logger.warning("could not record the delivery of %s: %s", pending_id, error)
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
            await handler.record(pending_id, entry)
        except StoreUnavailableError as error:
            # The append may run after the store gave up on it: a refund would let the next
            # delivery record a second entry. The claim stays spent.
            logger.warning("the delivery of %s may be left unrecorded: %s", pending_id, error)
        except BaseException as error:
            # The delivery stands; its record is left to the next delivery.
            await _refund(handler, claim)
            if not isinstance(error, Exception):
                raise
            logger.warning("could not record the delivery of %s: %s", pending_id, error)


def _digest(request: PendingInput, history: list[dict[str, Any]]) -> str:
    """The digest of the arguments the workflow asked about: the ``created`` entry's (an
    approval's arguments change with an edit; what was asked does not)."""
    for entry in history:
        if entry.get("type") == "created" and isinstance(entry.get("digest"), str):
            return str(entry["digest"])
    return arguments_digest(request.tool_name, request.arguments)


async def _refund(handler: HumanInputHandler, claim: str) -> None:
    try:
        await handler.ledger.refund_spent(claim)
    except Exception as error:
        logger.warning("could not release %s: %s", claim, error)


def _unreachable(error: RPCError) -> DeliveryError:
    return DeliveryError(f"Temporal is unreachable: {error}", retry=True)


def _reason(error: WorkflowUpdateFailedError) -> str:
    cause = error.cause
    return str(getattr(cause, "message", None) or cause or error)

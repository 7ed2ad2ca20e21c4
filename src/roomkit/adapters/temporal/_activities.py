"""The worker's side: the activities that create a workflow's requests and read their end.

``activities(handler)`` gives the three activities a worker registers. The create activity
makes the request of one ask with the key the workflow fixed for it, so a retry, a worker
that crashed before reporting, and a replay all re-attach to the same request; it records
the ask's ladder and the request's announcement in the store's outbox, so that whichever
notifier runs, now or later, delivers its outcome; the first ask of a retry, or of a run
continued as new, first withdraws the questions the earlier runs left open. The expire
activity runs when the workflow's timer fires: it records the timeout if nobody answered,
and returns the outcome the store holds. The withdraw activity runs when the workflow is
cancelled while a person is asked: the request is withdrawn, so it leaves the desk and a late
answer is refused.

Each activity heartbeats while it runs (when the workflow gave it a heartbeat timeout), so
Temporal retries one whose worker died within that timeout rather than the attempt's whole
``start_to_close_timeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from roomkit.adapters.temporal._ended import withdraw_earlier_runs
from roomkit.adapters.temporal._protocol import (
    CHANNEL,
    CREATE_ACTIVITY,
    EXPIRE_ACTIVITY,
    WITHDRAW_ACTIVITY,
    Origin,
    hashed_key,
    outcome_of,
    tool_call_id_of,
)
from roomkit.core.exceptions import (
    KeyConflictError,
    RoomKitError,
    StoreError,
)
from roomkit.core.tasks import cancel_and_wait
from roomkit.models.json_limits import MAX_SCOPED_KEY_BYTES
from roomkit.models.pending_input import PendingInput, PendingInputStatus, arguments_digest
from roomkit.models.shown import shown
from roomkit.stores.outbox import OutboxItem, now_of, outbox_for, step_id
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.checks import check_approvers, scoped_key_bytes
from roomkit.tools.human_input.ladder import (
    Ladder,
    default,
    escalate,
    record_default,
    record_ladder,
    remind,
)

__all__ = ["activities"]

_PENDING = PendingInputStatus.PENDING
_TIMED_OUT = PendingInputStatus.TIMED_OUT
_T = TypeVar("_T")
_BEATS_PER_TIMEOUT = 4
"""Heartbeats per heartbeat timeout: the SDK sends at most one per 80 % of the timeout, the
newest, so one always reaches the server in time."""


async def _beating(work: Awaitable[_T]) -> _T:
    """Await ``work`` while heartbeating, if the workflow gave the activity a heartbeat
    timeout: the worker is alive as long as the event loop runs, however long the store
    takes."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        return await work
    beats = asyncio.create_task(_beat(timeout.total_seconds() / _BEATS_PER_TIMEOUT))
    try:
        return await work
    finally:
        await cancel_and_wait([beats])


async def _beat(interval: float) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(interval)


def _refused(error: Exception) -> ApplicationError:
    """An input the store refuses: the ask fails at once with the reason (no retry)."""
    return ApplicationError(str(error), type="ValueError", non_retryable=True)


def _key_of(key: str, room_id: str, actor_id: str | None) -> str:
    """The ask's key as its request keeps it: as the workflow made it, or ``sha256:`` and
    the hex digest of it when it is longer with its scope than a store keeps. Its workflow
    id, up to 1,000 bytes in Temporal, takes up to six times that as JSON (a quote or a
    control character is escaped): its workflow can still ask. Every attempt gives the
    same key, and one a store keeps stays as it is."""
    if scoped_key_bytes(room_id, CHANNEL, actor_id, key) <= MAX_SCOPED_KEY_BYTES:
        return key
    return hashed_key(key)


def _ladder_of(spec: dict[str, Any] | None) -> Ladder | None:
    if not spec:
        return None
    steps = [
        remind(step["after"]) if step.get("to") is None else escalate(step["after"], step["to"])
        for step in spec.get("steps", ())
    ]
    text = spec.get("default")
    return Ladder(*steps, on_expiry=None if text is None else default(text))


class _Activities:
    """The activities of one worker, on one handler."""

    def __init__(self, handler: HumanInputHandler) -> None:
        self.handler = handler

    async def create(self, ask: dict[str, Any]) -> dict[str, Any]:
        info = activity.info()
        if not info.workflow_id or not info.workflow_run_id:
            raise _refused(ValueError(f"{CREATE_ACTIVITY} runs for a workflow's ask_person()"))
        seq = int(ask["seq"])
        origin = Origin(info.workflow_id, info.workflow_run_id, seq, info.workflow_namespace)
        handler, tool, arguments = self.handler, ask["tool_name"], ask["arguments"]
        common: dict[str, Any] = {
            "room_id": ask.get("room_id") or "",
            "tool_call_id": tool_call_id_of(origin),
            "channel_id": CHANNEL,
            "actor_id": ask.get("actor"),
            "timeout": float(ask["timeout"]),
        }
        joining = ask.get("approvers") or ()
        if ask.get("continues") and origin.seq == 1:
            # A retry's first ask, or a continued run's: the earlier runs' questions go.
            await withdraw_earlier_runs(activity.client(), handler, origin, ask["continues"])
        try:
            common["key"] = _key_of(ask["key"], common["room_id"], common["actor_id"])
            ladder = _ladder_of(ask.get("ladder"))
            if ladder is not None:
                ladder.check(float(ask["timeout"]))
            if ask["kind"] == "approval":
                request = await handler.create_approval(
                    tool,
                    arguments,
                    approvers=joining,
                    tool_schema=ask.get("answer_schema"),
                    quorum=ask.get("quorum"),
                    surface="temporal",
                    **common,
                )
            else:
                # A question's approvers are added once it is made: what adding them would
                # refuse is refused first, so that a refusal leaves nothing on the desk.
                check_approvers(joining, actor_id=common["actor_id"], directory=handler.directory)
                request = await handler.create_detached(
                    tool, arguments, answer_schema=ask.get("answer_schema"), **common
                )
        except StoreError:
            raise  # retried: the store may be back on the next attempt
        except (ValueError, TypeError, RoomKitError) as error:
            raise _refused(error) from None
        asked = arguments_digest(tool, arguments)
        if request.kind == "question" and arguments_digest(tool, request.arguments) != asked:
            # The ask's key names a question about other arguments: a workflow reset to
            # before it, running new code. Its answer is not this question's.
            raise _refused(
                KeyConflictError(
                    f"the key {shown(ask['key'])} names request {request.pending_id}, a question "
                    "about other arguments: it was asked before the workflow was reset",
                    request,
                )
            )
        if request.kind == "question":
            # Once: a re-attached request has them already (and its history says so).
            await self._add_approvers(request, joining)
        if request.status is _PENDING:
            await self._owed(request, ladder)
        return outcome_of(request, asked)

    async def _add_approvers(self, request: PendingInput, approvers: Sequence[str]) -> None:
        """Let ``approvers`` answer the open question ``request`` too, those it lacks."""
        joining = [a for a in approvers if a not in request.approvers]
        if not joining or request.status is not _PENDING:
            return
        try:
            await self.handler.add_approvers(request.pending_id, joining)
        except StoreError:
            raise  # retried: the store may be back on the next attempt
        except (ValueError, TypeError, RoomKitError) as error:
            raise _refused(error) from None

    async def _owed(self, request: PendingInput, ladder: Ladder | None) -> None:
        """Record the ladder and the announcement in the outbox (once: a re-attached request
        adds nothing): a notifier that starts after the request settled still ends it."""
        handler, pending_id = self.handler, request.pending_id
        if ladder is not None:
            await record_ladder(handler, request, ladder)
        now = now_of(handler)
        announce = step_id(pending_id, "announce")
        await outbox_for(handler).add(
            [OutboxItem(announce, pending_id, now, {"job": "announce"}, created=now)]
        )

    async def expire(self, ask: dict[str, Any]) -> dict[str, Any]:
        handler, pending_id = self.handler, ask["pending_id"]
        request = await handler.get_request(pending_id)
        if request is None:
            raise ApplicationError(
                f"request {pending_id} is no longer in the store (its outcome left the "
                "retention): keep outcomes longer than a workflow's timeout and grace",
                type="UnknownRequest",
                non_retryable=True,
            )
        if request.status is _PENDING:
            left = handler.time_left(request)
            if left is None or left > 0:
                # The workflow's clock ran ahead of the store's: try again after a while.
                raise ApplicationError(f"request {pending_id} is due in {left}s, not yet")
            request = (await handler.expire_overdue([request]) or [request])[0]
        outcome = outcome_of(request, ask.get("digest"))
        ladder = _ladder_of(ask.get("ladder"))
        if request.status is _TIMED_OUT and ladder is not None and ladder.on_expiry is not None:
            answer = ladder.on_expiry.text
            await self._defaulted(pending_id, answer)
            outcome["default"] = answer
        return outcome

    async def withdraw(self, ask: dict[str, Any]) -> dict[str, Any]:
        """Withdraw the request of an ask whose workflow was cancelled: it leaves the desk,
        and a late answer is refused. One settled meanwhile stays as it is."""
        return {"withdrawn": await self.handler.arelease(ask["pending_id"])}

    async def _defaulted(self, pending_id: str, answer: str) -> None:
        """Record that ``pending_id`` was answered with its ladder's default, once
        (:func:`~roomkit.tools.human_input.ladder.record_default`): attempts of the expire
        activity may overlap (one timed out while still running), and the workflow runs it
        again when the timeout came by update. An append that the store did not see through
        and that lands later takes the place the next attempt's would: one is written.
        """
        try:
            await record_default(self.handler, pending_id, answer)
        except StoreError:
            raise  # retried: the store may be back on the next attempt
        except (ValueError, RoomKitError) as error:
            # No attempt can record it: the workflow gets the reason, not endless retries.
            raise _refused(
                ValueError(
                    f"request {pending_id} timed out, and its ladder's default cannot be "
                    f"recorded: {error}: give the ladder a default UTF-8 can encode"
                )
            ) from None


def activities(handler: HumanInputHandler) -> Sequence[Callable[..., Any]]:
    """The activities a worker registers for ``ask_person`` and ``request_approval``.

    ``Worker(client, task_queue=..., workflows=[...], activities=activities(handler))``;
    add your own with ``[*activities(handler), book]``. ``handler`` holds the requests
    (a durable store, so the desk and the notifier see them from their own processes).
    """
    if not isinstance(handler, HumanInputHandler):
        raise TypeError(f"activities() takes a HumanInputHandler, got {type(handler).__name__}")
    bound = _Activities(handler)

    # Functions of their own: Temporal marks each, and a bound method takes no marks.
    @activity.defn(name=CREATE_ACTIVITY)
    async def create(ask: dict[str, Any]) -> dict[str, Any]:
        return await _beating(bound.create(ask))

    @activity.defn(name=EXPIRE_ACTIVITY)
    async def expire(ask: dict[str, Any]) -> dict[str, Any]:
        return await _beating(bound.expire(ask))

    @activity.defn(name=WITHDRAW_ACTIVITY)
    async def withdraw(ask: dict[str, Any]) -> dict[str, Any]:
        return await _beating(bound.withdraw(ask))

    return [create, expire, withdraw]

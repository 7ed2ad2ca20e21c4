"""Workflow code: ask a person, or hold a call for approval, and resume exactly once.

Each ask runs the create activity (:data:`CREATE_ACTIVITY`) with a key fixed per ask, so a
retried activity, a worker that crashed and a replay re-attach to the same request. The
outcome arrives as an update of the one handler :data:`UPDATE_NAME`, which the first ask of
a workflow sets before its request exists; its validator refuses an outcome for a request
this workflow did not make, for arguments it did not ask about, for an ask already
settled, or one the workflow's cancel came before (the answer was not taken). The person's
deadline is the request's: the workflow's own timer runs ``grace`` longer, and when it
fires the expire activity asks the store for the outcome (recording the timeout if nobody
answered), so an answer in flight always wins.
"""

from __future__ import annotations

import asyncio
import weakref
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from roomkit.adapters.temporal._asks import Ask, Asks
    from roomkit.adapters.temporal._checks import (
        Spec,
        approvers_of,
        check_answer_schema,
        check_approver_count,
        check_arguments,
        check_fields,
        check_grace,
        check_input,
        check_json,
        check_ladder,
        check_schema_text,
        seconds_of,
    )
    from roomkit.adapters.temporal._protocol import (
        CREATE_ACTIVITY,
        EXPIRE_ACTIVITY,
        UPDATE_NAME,
        WITHDRAW_ACTIVITY,
        decision_of,
        settled,
    )
    from roomkit.adapters.temporal._scheduling import run_activity
    from roomkit.adapters.temporal._timeouts import ActivityTimeouts
    from roomkit.core.exceptions import (
        HumanInputRejectedError,
        HumanInputTimeoutError,
        RequestWithdrawnError,
    )
    from roomkit.models.pending_input import arguments_digest
    from roomkit.models.shown import shown
    from roomkit.tools.approvals import Decision, read_decision
    from roomkit.tools.human_input.ladder import Ladder

__all__ = ["ask_person", "request_approval"]

GRACE = timedelta(seconds=60)
"""How much longer than the person's deadline the workflow's own timer runs."""

_REJECTED = "Request rejected"
_WITHDRAWS = "roomkit-withdraw-on-cancel"
"""The patch that withdraws a cancelled workflow's open request."""
_WITHDRAWS_MADE = "roomkit-withdraw-on-cancel-while-made"
"""The patch that lets the create activity of a workflow cancelled meanwhile end, and
withdraws the request it made (before it, the activity was cancelled and the request left
to its deadline)."""
_CHECKS_APPROVERS = "roomkit-approvers-checked"
"""The patch that refuses approvers given as one string (or no actor ids)."""
_CHECKS_FIELDS = "roomkit-fields-checked"
"""The patch that refuses, in the workflow, what no store keeps: an actor or room that is no
text, text UTF-8 cannot encode, arguments longer than a history entry."""
_CHECKS_LIMITS = "roomkit-arguments-limits-checked"
"""The patch that refuses, in the workflow and before anything writes them, arguments longer
than a request keeps, nested deeper or holding a longer number (its own, not
``_CHECKS_FIELDS``: arguments nested 30 levels deep, which a store kept, replay as they were
asked)."""
_CHECKS_INPUT = "roomkit-input-checked"
"""The patch that refuses, in the workflow, a create activity's input past Temporal's payload
limit (its own, not ``_CHECKS_FIELDS``: an input a payload codec shrank, or a server with a
higher limit, took, replays as it was scheduled)."""
_CHECKS_LADDER = "roomkit-ladder-checked"
"""The patch that refuses, in the workflow, a ladder that is no ``Ladder``, or whose default
or escalation UTF-8 cannot encode (its own: an ask replayed from before it was scheduled as
it was made, and its expire activity now fails on the default instead of retrying)."""
_CHECKS_SCHEMA = "roomkit-schema-text-checked"
"""The patch that refuses, in the workflow, a schema holding text UTF-8 cannot encode, under
the name the caller gave it (its own: an ask replayed from before it was refused by the
create activity, naming ``answer_schema`` whatever the call named it)."""
_CHECKS_GRACE = "roomkit-grace-checked"
"""The patch that refuses, in the workflow, a ``grace`` longer than a century (its own: an
ask replayed from before it started the timer it was given)."""
_CHECKS_APPROVER_COUNT = "roomkit-approver-count-checked"
"""The patch that refuses, in the workflow, more approvers than a request lists (its own: an
ask replayed from before it was refused by the create activity, after a trip)."""
_CHECKS_ANSWER_SCHEMA = "roomkit-answer-schema-checked"
"""The patch that refuses, in the workflow, a schema no answer (no edit) could be checked
against: a ``$ref`` to nowhere, no valid JSON Schema, no dict (its own: an ask replayed from
before it was refused by the create activity, after a trip)."""
_WITHDRAW_RETRY = RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(seconds=10))
"""A withdraw tries for about half a minute; past that the request is left to its deadline."""


_STATE: dict[int, Asks] = {}
"""Each workflow's asks, by its instance's identity (an instance need not be hashable: a
dataclass compares by value), until the instance goes."""


def _asks(call: str) -> Asks:
    """This workflow's asks; the first call sets the update handler."""
    if not workflow.in_workflow():
        raise RuntimeError(
            f"{call}() runs in workflow code (a @workflow.run method or what it calls); "
            "outside a workflow, use HumanInputHandler.create() and wait() directly"
        )
    instance = workflow.instance()
    state = _STATE.get(id(instance))
    if state is None:
        state = _STATE[id(instance)] = Asks()
        weakref.finalize(instance, _STATE.pop, id(instance), None)
        # Before any request exists: an update that finds no handler is lost.
        workflow.set_update_handler(UPDATE_NAME, state.settle, validator=state.validate)
    return state


def _ladder(ladder: Ladder | None) -> dict[str, Any] | None:
    """The ladder as the create activity takes it (JSON)."""
    if ladder is None:
        return None
    steps = [{"after": step.after, "to": getattr(step, "to", None)} for step in ladder.steps]
    on_expiry = ladder.on_expiry
    return {"steps": steps, "default": None if on_expiry is None else on_expiry.text}


async def _ask(
    call: str, kind: str, tool_name: str, arguments: dict[str, Any], spec: Spec
) -> dict[str, Any]:
    """Create (or re-attach to) the request of the next ask and wait for its outcome."""
    state = _asks(call)
    if not isinstance(tool_name, str) or not tool_name:
        raise ValueError(f"{call}(): tool_name must be a non-empty string, got {shown(tool_name)}")
    if not isinstance(arguments, dict):
        raise TypeError(f"{call}(): arguments must be a dict, got {type(arguments).__name__}")
    # The schema under the name the caller gave it.
    schema = "tool_schema" if kind == "approval" else "answer_schema"
    if workflow.patched(_CHECKS_LIMITS):
        check_arguments(call, arguments)
    check_json(call, "arguments", arguments)
    check_json(call, schema, spec.answer_schema)
    if workflow.patched(_CHECKS_FIELDS):
        check_fields(call, tool_name, arguments, spec)
    if workflow.patched(_CHECKS_APPROVERS):
        approvers = approvers_of(call, spec.approvers)
    else:  # an ask replayed from before the check: as it was made
        approvers = list(spec.approvers or ())
    if workflow.patched(_CHECKS_LADDER):
        check_ladder(call, spec.ladder)
    if workflow.patched(_CHECKS_SCHEMA):
        check_schema_text(call, schema, spec.answer_schema)
    timeout = seconds_of(call, "timeout", spec.timeout)
    grace = GRACE if spec.grace is None else spec.grace
    seconds_of(call, "grace", grace)
    if workflow.patched(_CHECKS_GRACE):
        check_grace(call, grace)
    timeouts = ActivityTimeouts() if spec.timeouts is None else spec.timeouts
    if not isinstance(timeouts, ActivityTimeouts):
        raise TypeError(
            f"{call}(): activity_timeouts must be an ActivityTimeouts, "
            f"got {type(timeouts).__name__}"
        )
    ladder = _ladder(spec.ladder)
    info = workflow.info()
    seq = state.count + 1
    # The chain's first run and the run it continues fix which asks are this execution's:
    # a replay, a retried activity or a reset finds the same key, a new execution another.
    key = f"{info.workflow_id}/{info.first_execution_run_id}/{info.continued_run_id or ''}/{seq}"
    request = {
        "kind": kind,
        "tool_name": tool_name,
        "arguments": arguments,
        "key": key,
        "seq": seq,
        "timeout": timeout,
        "ladder": ladder,
        "actor": spec.actor,
        "approvers": approvers,
        "room_id": spec.room_id or "",
        "answer_schema": spec.answer_schema,
        "quorum": spec.quorum,
        "continues": info.continued_run_id,
    }
    if workflow.patched(_CHECKS_INPUT):
        check_input(call, request, schema=schema)
    if workflow.patched(_CHECKS_APPROVER_COUNT):
        check_approver_count(call, kind, spec.actor, approvers)
    if workflow.patched(_CHECKS_ANSWER_SCHEMA):
        check_answer_schema(call, kind, tool_name, spec.answer_schema)
    state.count = seq
    ask = state.asks[seq] = Ask(
        seq,
        arguments_digest(tool_name, arguments),
        key,
        kind,
        after_cancel=workflow.cancellation_reason() is not None,
    )
    if workflow.patched(_WITHDRAWS_MADE):
        created = await _created(ask, request, timeouts)
    else:  # an ask replayed from before: its create is cancelled with the workflow
        created = await run_activity(CREATE_ACTIVITY, request, timeouts)
    if ask.outcome is not None and ask.outcome["pending_id"] != created["pending_id"]:
        ask.outcome = None  # taken before the create returned, for another request
    ask.pending_id = created["pending_id"]
    if ask.outcome is None and settled(created):
        ask.outcome = created
    try:
        await workflow.wait_condition(
            lambda: ask.outcome is not None, timeout=timeout + grace.total_seconds()
        )
    except asyncio.CancelledError:
        # The workflow was cancelled while the person is asked: the question is withdrawn.
        # (A history cancelled before this step existed is replayed without it.)
        if workflow.patched(_WITHDRAWS):
            await _withdraw(ask, timeouts)
        raise
    except TimeoutError:
        # Roomkit's deadline passed a grace ago: the store holds the outcome, or the timeout
        # is recorded now. An answer recorded meanwhile wins over the timer.
        expired = await run_activity(
            EXPIRE_ACTIVITY,
            {"pending_id": ask.pending_id, "digest": ask.digest, "ladder": ladder},
            timeouts,
            retry=RetryPolicy(maximum_interval=timedelta(seconds=30)),
        )
        if ask.outcome is None:
            ask.outcome = expired
    outcome = ask.outcome
    assert outcome is not None
    defaulted = ladder is not None and ladder["default"] is not None
    if outcome["status"] == "timed_out" and defaulted and "default" not in outcome:
        # The timeout came by update: the default is recorded as the timer would have.
        outcome = await run_activity(
            EXPIRE_ACTIVITY,
            {"pending_id": ask.pending_id, "digest": ask.digest, "ladder": ladder},
            timeouts,
        )
    return outcome


async def _created(ask: Ask, request: dict[str, Any], timeouts: ActivityTimeouts) -> dict[str, Any]:
    """Run the create activity of ``ask``; a cancel that comes meanwhile lets it end (for at
    most one attempt's timeout), withdraws the request it made, and is raised."""
    creating = asyncio.ensure_future(run_activity(CREATE_ACTIVITY, request, timeouts))
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        try:
            await workflow.wait_condition(
                creating.done, timeout=timeouts.start_to_close.total_seconds()
            )
        except TimeoutError:
            creating.cancel()  # not made in time: the request is left to its deadline
            raise asyncio.CancelledError from None
        if not creating.cancelled() and creating.exception() is None:
            ask.pending_id = creating.result()["pending_id"]
            if not settled(creating.result()):
                await _withdraw(ask, timeouts)
        raise


async def _withdraw(ask: Ask, timeouts: ActivityTimeouts) -> None:
    """Withdraw the request of ``ask``; a worker that cannot leaves it to its deadline."""
    try:
        await run_activity(
            WITHDRAW_ACTIVITY, {"pending_id": ask.pending_id}, timeouts, retry=_WITHDRAW_RETRY
        )
    except (ActivityError, RuntimeError) as error:
        workflow.logger.warning(
            "request %s of a cancelled workflow is left to its deadline: %s", ask.pending_id, error
        )


def _answer(outcome: dict[str, Any]) -> str:
    """The answer ``outcome`` holds, or the error it stands for (as ``wait()`` raises it)."""
    status = outcome["status"]
    if status == "resolved":
        return str(outcome.get("result") or "")
    if status == "rejected":
        reason = outcome.get("reason") or _REJECTED
        if outcome.get("withdrawn"):
            raise RequestWithdrawnError(reason)
        raise HumanInputRejectedError(reason)
    if status == "timed_out":
        if outcome.get("default") is not None:
            return str(outcome["default"])
        raise HumanInputTimeoutError(
            f"Nobody answered pending request {outcome['pending_id']} before its deadline"
        )
    raise RuntimeError(f"request {outcome['pending_id']} came back {status!r}")


async def ask_person(
    tool_name: str,
    arguments: dict[str, Any],
    *,
    actor: str | None = None,
    approvers: list[str] | None = None,
    room_id: str | None = None,
    timeout: timedelta = timedelta(hours=1),
    answer_schema: dict[str, Any] | None = None,
    ladder: Ladder | None = None,
    grace: timedelta | None = None,
    activity_timeouts: ActivityTimeouts | None = None,
) -> str:
    """Ask a person from workflow code; the answer text, as ``HumanInputHandler.wait()``.

    Args:
        tool_name: what is asked (the desk shows it with ``arguments``).
        arguments: the question's arguments (JSON).
        actor: who is asked (an actor id); ``approvers`` may answer too.
        room_id: the room the desk lists it in.
        timeout: the person's deadline, kept on the request (ladders, defaults).
        answer_schema: a JSON Schema the answer (JSON text) must match.
        ladder: reminders and escalations, recorded with the request, and a default
            answer (``on_expiry=default(...)``) returned when nobody answers in time.
        grace: how much longer the workflow's timer runs than the deadline (60 s), at
            most a century.
        activity_timeouts: the start-to-close and heartbeat timeouts of the ask's
            activities (30 s and 5 s): the heartbeat one is how soon a worker that died
            running one is replaced; and, when the worker running the workflow runs none of
            them, how long its create waits for a worker before a warning says what to add
            (``unpolled``, a minute; the ask waits on, as long as it takes).

    Raises:
        HumanInputRejectedError: a person rejected the request, or its outcome is larger
            than Temporal carries into a workflow (about 2 MiB as JSON; the reason says so,
            and the answer stays in the store).
        HumanInputTimeoutError: nobody answered in time (a ``TimeoutError``).
        RequestWithdrawnError: the request was withdrawn (a ``RuntimeError``).
        RuntimeError: called outside a workflow, or a worker without
            ``activities(handler)`` took the create.
        TypeError: ``arguments`` or ``answer_schema`` is not JSON, ``answer_schema`` is
            no dict, ``ladder`` is no ``Ladder``, or ``activity_timeouts`` no
            ``ActivityTimeouts``.
        ValueError: an ask roomkit will not make: bad ``approvers`` (or more than 100
            with ``actor``), ``timeout``, ``grace``
            (no positive ``timedelta``, or one longer than a century) or ``ladder``; an
            ``actor`` or ``room_id`` that is not a ``str``; arguments longer than a request
            keeps; an ``answer_schema`` that is no valid JSON Schema or holds a ``$ref``
            that resolves to nothing in it; an ``answer_schema``, ``ladder`` or ``approvers``
            that makes the create activity's input larger than Temporal's payload limit
            (2 MiB); text UTF-8 cannot encode (``InvalidTextError``), the schema, the
            ladder's default and its escalations' actors included.
    """
    spec = Spec(
        actor, approvers, room_id, timeout, answer_schema, None, ladder, grace, activity_timeouts
    )
    return _answer(await _ask("ask_person", "question", tool_name, arguments, spec))


async def request_approval(
    tool_name: str,
    arguments: dict[str, Any],
    *,
    approvers: list[str],
    timeout: timedelta = timedelta(hours=1),
    quorum: int | None = None,
    actor: str | None = None,
    room_id: str | None = None,
    tool_schema: dict[str, Any] | None = None,
    ladder: Ladder | None = None,
    grace: timedelta | None = None,
    activity_timeouts: ActivityTimeouts | None = None,
) -> Decision:
    """Hold the call ``tool_name(arguments)`` until approvers decide; the decision.

    The request is bound to the arguments' digest as the tool loop's approvals are.
    ``quorum=N`` asks for N of ``approvers``. The decision is approve, edit (with the new
    arguments) or respond (an answer in the tool's place).

    Raises:
        HumanInputRejectedError: an approver rejected the call, with the reason, or the
            decision is larger than Temporal carries into a workflow.
        HumanInputTimeoutError, RequestWithdrawnError, RuntimeError: as :func:`ask_person`.
        TypeError: ``arguments`` or ``tool_schema`` is not JSON, ``tool_schema`` is no
            dict, or ``activity_timeouts`` no ``ActivityTimeouts``.
        ValueError: as :func:`ask_person`; also ``approvers`` empty or more than 100, a
            ``tool_schema`` that describes no object of arguments, or a ``quorum`` or a
            ladder's default that no decision fits.
    """
    if not approvers or isinstance(approvers, str):
        raise ValueError("request_approval(): approvers is a non-empty list of actor ids")
    if isinstance(ladder, Ladder) and ladder.on_expiry is not None:
        # The default stands for a decision: refused now, not when the deadline comes.
        try:
            read_decision(ladder.on_expiry.text)
        except ValueError as error:
            raise ValueError(
                f"request_approval(): the ladder's default is no decision: {error}"
            ) from None
    spec = Spec(
        actor, approvers, room_id, timeout, tool_schema, quorum, ladder, grace, activity_timeouts
    )
    outcome = await _ask("request_approval", "approval", tool_name, arguments, spec)
    # A default decides the call as asked: an edit that no quorum approved before the
    # deadline is not what it approves.
    edited = outcome.get("arguments") if outcome["status"] == "resolved" else None
    decision = decision_of(_answer(outcome), edited, arguments)
    if decision.kind == "reject":
        raise HumanInputRejectedError(decision.text or _REJECTED)
    return decision

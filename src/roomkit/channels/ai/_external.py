"""The provider's calls: the ones it already ran, and the ones its external handler decides.

A call carrying ``served`` is the provider's own run: its outcome is reported at once and it
passes no gate. With an external handler, a call to a name the channel does not serve itself
goes to the handler, which decides it (``process_tool_call``) and hears how each call ended:
``on_tool_result`` for a served call (a call the provider ran included), ``on_tool_refused``
for one it refused, and at the turn's teardown ``on_tool_cancelled`` for a call the turn cut
before its decision arrived. The channel reports a call itself when there is no handler, when
the handler raises, or when the handler's report does.

A call the handler lets through goes to the human-input handler's policy and ``approvals``
as on the channel's own path (refused, run unasked, or held for a person's decision):
approved or edited, the provider is handed exactly the arguments decided (and the run goes
into the request's history); rejected, answered instead or expired, the provider never
runs it.

The provider runs these tools on its own side, so their results are its to read: a round
whose every call is the provider's ends the turn, with no further model round.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.approve import executed, spend
from roomkit.channels._calls.checks import arguments_cut
from roomkit.channels._calls.outcome import CallOutcome, cut, refused, served
from roomkit.channels._calls.police import police
from roomkit.channels._calls.report import report
from roomkit.channels._calls.serve import crashed
from roomkit.models.pending_input import arguments_digest
from roomkit.providers.ai.base import AIToolCall
from roomkit.tools import texts
from roomkit.tools.context import ToolCallContext, _serving
from roomkit.tools.external import ExternalToolHandler, ToolDecision, call_on_tool_refused

if TYPE_CHECKING:
    from roomkit.channels.ai._turn import Turn

__all__ = ["run", "takes", "teardown"]

logger = logging.getLogger("roomkit.channels.ai")

CANCELLED_BOUND = 10.0
"""Seconds an external handler's ``on_tool_cancelled`` may take before the channel reports
the call itself: it runs in the turn's teardown, which a channel's close waits for."""


def takes(turn: Turn, call: AIToolCall) -> bool:
    """True when ``call`` is the provider's: already run, or its external handler's to decide."""
    if call.served is not None:
        return True
    return turn.channel.external_tool_handler is not None and not turn.serves_locally(call.name)


async def run(turn: Turn, call: AIToolCall) -> CallOutcome:
    """Report a call the provider ran, or have the external handler decide ``call``."""
    handler = turn.channel.external_tool_handler
    site = turn.site(call.id)
    body = None if call.served is not None else arguments_cut(call)
    if body is not None:
        return await report(site, call.name, refused(body, call.arguments))
    with _serving(ToolCallContext(turn.room_id, call.id, turn.channel.channel_id)):
        if call.served is not None:
            outcome = served(call.served.result, call.arguments, is_error=call.served.is_error)
            if handler is None:
                return await report(site, call.name, outcome)
            await _tell_result(turn, handler, call.id, call.name, outcome)
            return outcome
        assert handler is not None
        return await _decide(turn, handler, call)


async def _decide(turn: Turn, handler: ExternalToolHandler, call: AIToolCall) -> CallOutcome:
    name, arguments = call.name, call.arguments
    turn.unreported[call.id] = (name, arguments)
    try:
        decision = await handler.process_tool_call(
            name, arguments, tool_call_id=call.id, room_id=turn.room_id
        )
        if not isinstance(decision, ToolDecision):
            raise TypeError(
                f"process_tool_call returned {type(decision).__name__}, not ToolDecision"
            )
    except asyncio.CancelledError:
        raise
    except Exception as error:
        del turn.unreported[call.id]
        return await report(turn.site(call.id), name, crashed(name, arguments, error))
    del turn.unreported[call.id]
    if decision.modified_input is not None:
        arguments = decision.modified_input
    if not decision.approved:
        body = texts.error_body(decision.reason or texts.external_denied(name))
        return await _refuse(turn, handler, call, refused(body, arguments, detail=decision.detail))
    if decision.result is None:
        turn.unreported[call.id] = (name, arguments)
        try:
            held_outcome, arguments = await _hold(turn, handler, call, arguments)
        finally:
            turn.unreported.pop(call.id, None)
        if held_outcome is not None:
            return held_outcome
    # Approved without a result: the provider runs the call itself, and its result is the
    # provider's to read, so the channel has none to give.
    outcome = served(decision.result if decision.result is not None else "", arguments)
    await _tell_result(turn, handler, call.id, name, outcome)
    return outcome


async def _hold(
    turn: Turn,
    handler: ExternalToolHandler,
    call: AIToolCall,
    arguments: dict[str, Any],
) -> tuple[CallOutcome | None, dict[str, Any]]:
    """Put an approved external call to its policy and rule (held for a person, refused,
    or run unasked); what the model reads when it must not run (or the recorded outcome of
    a run already made), else the arguments to hand over."""
    name, site, channel = call.name, turn.site(call.id), turn.channel
    verdict = await police(site, channel, name, arguments, site.tools.get(name))
    if verdict is None:
        return None, arguments
    outcome = verdict.outcome
    if outcome is not None and outcome.refused:
        return await _refuse(turn, handler, call, outcome), arguments
    if outcome is not None:
        await _tell_result(turn, handler, call.id, name, outcome)
        return outcome, arguments
    assert verdict.arguments is not None
    human = channel.human_input_handler
    if verdict.request is None or human is None:
        return None, verdict.arguments
    replayed = await spend(human.handler, verdict)
    if replayed is None and arguments_digest(name, verdict.arguments) != verdict.digest:
        replayed = refused(texts.approval_mismatch(name), verdict.arguments)
    if replayed is not None:
        await _tell_result(turn, handler, call.id, name, replayed)
        return replayed, arguments
    # The provider runs it: what it was handed is the run the history records.
    await executed(human.handler, verdict, served("", verdict.arguments))
    return None, verdict.arguments


async def _refuse(
    turn: Turn, handler: ExternalToolHandler, call: AIToolCall, outcome: CallOutcome
) -> CallOutcome:
    """Tell the handler it refused ``call`` (or report it, when the handler fails)."""
    try:
        await call_on_tool_refused(
            handler,
            call.name,
            outcome.arguments,
            outcome.content,
            tool_call_id=call.id,
            room_id=turn.room_id,
            detail=outcome.error_detail,
        )
    except Exception:
        logger.exception("%s.on_tool_refused failed", type(handler).__name__)
        await report(turn.site(call.id), call.name, outcome)
    return outcome


async def _tell_result(
    turn: Turn, handler: ExternalToolHandler, call_id: str, name: str, outcome: CallOutcome
) -> None:
    """Tell the handler how a call it let through (or the provider ran) ended."""
    try:
        await handler.on_tool_result(
            name,
            outcome.arguments,
            outcome.content,
            is_error=outcome.is_error,
            tool_call_id=call_id,
            room_id=turn.room_id,
        )
    except Exception:
        logger.exception("%s.on_tool_result failed", type(handler).__name__)
        await report(turn.site(call_id), name, outcome)


async def teardown(turn: Turn) -> None:
    """Tell the handler about each call the turn cut before its decision arrived; report
    the call here when the handler raises or takes over :data:`CANCELLED_BOUND`."""
    handler = turn.channel.external_tool_handler
    if handler is None or not turn.unreported:
        return
    pending, turn.unreported = turn.unreported, {}
    for call_id, (name, arguments) in pending.items():
        # The turn's teardown holds up the channel's close: a handler gets a bound.
        bound = asyncio.timeout(CANCELLED_BOUND)
        try:
            async with bound:
                await handler.on_tool_cancelled(
                    name, arguments, tool_call_id=call_id, room_id=turn.room_id
                )
            continue
        except Exception:
            if bound.expired():
                logger.warning(
                    "%s.on_tool_cancelled did not return within %g s: the call is reported "
                    "cancelled without it",
                    type(handler).__name__,
                    CANCELLED_BOUND,
                )
            else:
                logger.exception("%s.on_tool_cancelled failed", type(handler).__name__)
        await report(turn.site(call_id), name, cut(name, arguments, turn.cut_hint()))

"""Report: tell ON_TOOL_CALL how each realtime call ended, exactly once.

The event carries the channel's type (``realtime_voice``, ``conference``), the session and the
person the call was for as its actor. A
served call runs the SYNC chain (which may replace the result through ``metadata["result"]``
or block it), then the ASYNC observers. A refused, failed or cancelled call goes to the ASYNC
observers only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from roomkit.channels.ai._outcome import CallOutcome, error_body
from roomkit.models.hooks import HookExecution, HookTrigger
from roomkit.models.tool_call import ToolCallEvent

if TYPE_CHECKING:
    from roomkit.channels.realtime_voice._call import RealtimeCall

__all__ = ["cut", "report"]

_TRIGGER = HookTrigger.ON_TOOL_CALL


def cut(call: RealtimeCall, hint: str) -> CallOutcome:
    """The outcome of a call cut before its result; ``hint`` says why."""
    content = error_body("Tool call cancelled", tool=call.name, hint=hint)
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    return CallOutcome(content, arguments, is_error=True, cancelled=True)


async def report(call: RealtimeCall, outcome: CallOutcome) -> CallOutcome:
    """Report the call; return the outcome the model reads (a SYNC hook may change it)."""
    kit = call.kit
    channel_id, door = call.channel.channel_id, call.channel.channel_type
    hooks = kit.hooks if kit is not None else None
    if hooks is None or not hooks.has_hooks(_TRIGGER, channel_type=door, channel_id=channel_id):
        return outcome
    ctx = await call.context()
    if ctx is None:
        return outcome
    event = ToolCallEvent(
        channel_id,
        door,
        call.call_id,
        call.name,
        outcome.arguments,
        outcome.content,
        call.room_id,
        session=call.session,
        is_error=outcome.is_error,
        cancelled=outcome.cancelled,
        error_detail=outcome.error_detail,
        refused=outcome.refused,
        actor_id=call.actor_id,
    )
    succeeded = not (outcome.is_error or outcome.refused or outcome.cancelled)
    if succeeded and hooks.has_hooks(
        _TRIGGER, execution=HookExecution.SYNC, channel_type=door, channel_id=channel_id
    ):
        decided = await hooks.run_sync(
            _TRIGGER, event, ctx, channel_type=door, channel_id=channel_id
        )
        if not decided.allowed:
            reason = decided.reason or f"Tool '{call.name}' result blocked by hook."
            event = replace(event, result=error_body(reason), is_error=True)
        elif "result" in decided.metadata:
            event = replace(event, result=str(decided.metadata["result"]))
    hooks.run_async(_TRIGGER, event, ctx, channel_type=door, channel_id=channel_id)
    if event.result == outcome.content and event.is_error == outcome.is_error:
        return outcome
    content = event.result if isinstance(event.result, str) else str(event.result)
    return CallOutcome(content, outcome.arguments, is_error=event.is_error)

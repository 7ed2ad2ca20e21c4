"""Report: tell ON_TOOL_CALL how each call ended, exactly once.

A served call runs the SYNC chain (which may replace the result through
``metadata["result"]`` or block it), then the ASYNC observers. A refused, failed or cancelled
call goes to the ASYNC observers only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from roomkit.channels.ai._outcome import CallOutcome, error_body
from roomkit.models.enums import ChannelType
from roomkit.models.hooks import HookExecution, HookTrigger
from roomkit.models.tool_call import ToolCallEvent

if TYPE_CHECKING:
    from roomkit.channels.ai._turn import Turn

__all__ = ["report", "report_event"]

_TRIGGER = HookTrigger.ON_TOOL_CALL


def _event(turn: Turn, call_id: str, name: str, outcome: CallOutcome) -> ToolCallEvent:
    return ToolCallEvent(
        turn.channel.channel_id,
        ChannelType.AI,
        call_id,
        name,
        outcome.arguments,
        outcome.content,
        turn.room_id,
        is_error=outcome.is_error,
        cancelled=outcome.cancelled,
        error_detail=outcome.error_detail,
        refused=outcome.refused,
        actor_id=turn.actor_id,
    )


async def report(turn: Turn, call_id: str, name: str, outcome: CallOutcome) -> CallOutcome:
    """Report the call; return the outcome the model reads (a SYNC hook may change it)."""
    event = await report_event(turn, _event(turn, call_id, name, outcome))
    if event.result == outcome.content and event.is_error == outcome.is_error:
        return outcome
    content = event.result if isinstance(event.result, str) else str(event.result)
    return CallOutcome(content, outcome.arguments, is_error=event.is_error)


async def report_event(turn: Turn, event: ToolCallEvent) -> ToolCallEvent:
    """Run ON_TOOL_CALL for ``event``; return it as the SYNC chain left it."""
    kit = turn.kit
    if kit is None or not event.room_id:
        return event
    hooks = kit.hooks
    if not hooks.has_hooks(_TRIGGER, channel_type=ChannelType.AI, channel_id=event.channel_id):
        return event
    ctx = await turn.context()
    if ctx is None:
        return event
    succeeded = not (event.is_error or event.refused or event.cancelled)
    if succeeded and hooks.has_hooks(
        _TRIGGER,
        execution=HookExecution.SYNC,
        channel_type=ChannelType.AI,
        channel_id=event.channel_id,
    ):
        decided = await hooks.run_sync(
            _TRIGGER, event, ctx, channel_type=ChannelType.AI, channel_id=event.channel_id
        )
        if not decided.allowed:
            reason = decided.reason or f"Tool '{event.name}' result blocked by hook."
            event = replace(event, result=error_body(reason), is_error=True)
        elif "result" in decided.metadata:
            event = replace(event, result=str(decided.metadata["result"]))
    hooks.run_async(_TRIGGER, event, ctx, channel_type=ChannelType.AI, channel_id=event.channel_id)
    return event

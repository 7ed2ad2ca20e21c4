"""Report: tell ON_TOOL_CALL how each call ended, exactly once.

The event carries the call site's channel type, its session and the actor the call was for.
A served call runs the SYNC chain (which may replace the result through ``metadata["result"]``
or block it), then the ASYNC observers. A refused, failed or cancelled call goes to the ASYNC
observers only. The pipeline reports each call it runs once, on every way out, a cut
included; the AI channel's external path reports the calls its handler does not.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from roomkit.channels._calls.outcome import CallOutcome
from roomkit.models.hooks import HookExecution, HookTrigger
from roomkit.models.tool_call import ToolCallEvent
from roomkit.tools import texts

if TYPE_CHECKING:
    from roomkit.channels._calls.site import CallSite

__all__ = ["report", "report_event"]

_TRIGGER = HookTrigger.ON_TOOL_CALL


async def report(site: CallSite, name: str, outcome: CallOutcome) -> CallOutcome:
    """Report the call; return the outcome the model reads (a SYNC hook may change it)."""
    event = site.event(
        name,
        outcome.arguments,
        outcome.content,
        is_error=outcome.is_error,
        cancelled=outcome.cancelled,
        error_detail=outcome.error_detail,
        refused=outcome.refused,
    )
    event = await report_event(site, event)
    if event.result == outcome.content and event.is_error == outcome.is_error:
        return outcome
    content = event.result if isinstance(event.result, str) else str(event.result)
    return CallOutcome(content, outcome.arguments, is_error=event.is_error)


async def report_event(site: CallSite, event: ToolCallEvent) -> ToolCallEvent:
    """Run ON_TOOL_CALL for ``event``; return it as the SYNC chain left it."""
    kit = site.kit
    if kit is None or not event.room_id:
        return event
    hooks = kit.hooks
    door, channel_id = site.channel_type, event.channel_id
    if not hooks.has_hooks(_TRIGGER, channel_type=door, channel_id=channel_id):
        return event
    ctx = await site.contexts()
    if ctx is None:
        return event
    succeeded = not (event.is_error or event.refused or event.cancelled)
    if succeeded and hooks.has_hooks(
        _TRIGGER, execution=HookExecution.SYNC, channel_type=door, channel_id=channel_id
    ):
        decided = await hooks.run_sync(
            _TRIGGER, event, ctx, channel_type=door, channel_id=channel_id
        )
        if not decided.allowed:
            reason = decided.reason or texts.result_blocked(event.name)
            event = replace(event, result=texts.error_body(reason), is_error=True)
        elif "result" in decided.metadata:
            event = replace(event, result=str(decided.metadata["result"]))
    hooks.run_async(_TRIGGER, event, ctx, channel_type=door, channel_id=channel_id)
    return event

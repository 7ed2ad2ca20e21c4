"""Gate: BEFORE_TOOL_USE decides whether a validated realtime call runs, and with which arguments.

Every door goes through it, with the channel's type on the event (``realtime_voice``,
``conference``), the session, and the person the call is for as its actor. The trigger fails
closed: a hook that raises, times out or returns something that is not a ``HookResult``
refuses the call, with what failed as the report's ``error_detail``. A rewrite under
``metadata["arguments"]`` is validated against the tool's schema again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roomkit.models.hooks import HookOutcome, HookTrigger
from roomkit.models.tool_call import ToolCallEvent
from roomkit.providers.ai.base import AITool
from roomkit.tools.validation import validate_tool_arguments

if TYPE_CHECKING:
    from roomkit.channels.realtime_voice._call import RealtimeCall

__all__ = ["GateDecision", "gate"]

logger = logging.getLogger("roomkit.channels.realtime_voice")

_TRIGGER = HookTrigger.BEFORE_TOOL_USE


@dataclass(frozen=True, slots=True)
class GateDecision:
    """Whether the call runs, with which arguments, and if not, why."""

    allowed: bool
    arguments: dict[str, Any]
    reason: str | None = None
    """What the model reads when refused."""
    detail: str | None = None
    """What failed, when a hook failed closed."""


async def gate(call: RealtimeCall, tool: AITool, arguments: dict[str, Any]) -> GateDecision:
    """Run BEFORE_TOOL_USE for one validated call."""
    kit = call.kit
    allow = GateDecision(True, arguments)
    if kit is None:
        return allow
    channel_id, door = call.channel.channel_id, call.channel.channel_type
    hooks = kit.hooks
    if not hooks.has_hooks(_TRIGGER, channel_type=door, channel_id=channel_id):
        await _announce(call, allow)
        return allow
    ctx = await call.context()
    if ctx is None:
        denied = f"Tool '{call.name}' denied: its room is unavailable."
        return GateDecision(False, arguments, denied)
    event = ToolCallEvent(
        channel_id,
        door,
        call.call_id,
        call.name,
        arguments,
        None,
        call.room_id,
        session=call.session,
        actor_id=call.actor_id,
    )
    outcome = await hooks.run_sync(_TRIGGER, event, ctx, channel_type=door, channel_id=channel_id)
    if not outcome.allowed:
        reason = outcome.reason or f"Tool '{call.name}' denied by pre-execution hook."
        decision = GateDecision(False, arguments, reason, outcome.detail)
    else:
        decision = _rewrite(call.name, arguments, outcome, event, tool)
        if decision.allowed:
            hooks.run_async(_TRIGGER, event, ctx, channel_type=door, channel_id=channel_id)
    await _announce(call, decision)
    return decision


def _rewrite(
    name: str,
    arguments: dict[str, Any],
    outcome: HookOutcome,
    original: ToolCallEvent,
    tool: AITool,
) -> GateDecision:
    modified = outcome.event
    if "arguments" in outcome.metadata:
        new = outcome.metadata["arguments"]
    elif isinstance(modified, ToolCallEvent) and modified is not original:
        new = modified.arguments
    else:
        return GateDecision(True, arguments)
    if not isinstance(new, dict):
        logger.warning(
            "BEFORE_TOOL_USE hook returned non-object arguments for %s: denying the call", name
        )
        return GateDecision(False, arguments, f"Tool '{name}' denied by pre-execution hook.")
    problem = validate_tool_arguments(tool.parameters, new)
    if problem is not None:
        return GateDecision(
            False, arguments, f"Invalid rewritten arguments for '{name}': {problem}"
        )
    return GateDecision(True, new)


async def _announce(call: RealtimeCall, decision: GateDecision) -> None:
    kit = call.kit
    if kit is not None and kit.has_listeners("before_tool_use"):
        await kit.emit(
            "before_tool_use",
            {
                "tool_name": call.name,
                "tool_call_id": call.call_id,
                "allowed": decision.allowed,
                "reason": decision.reason,
            },
            room_id=call.room_id,
        )

"""Gate: BEFORE_TOOL_USE decides whether a validated call runs, and with which arguments.

The trigger fails closed: a hook that raises, times out or returns something that is not a
``HookResult`` refuses the call, with what failed as the report's ``error_detail``. A rewrite
under ``metadata["arguments"]`` is validated against the tool's schema again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roomkit.models.enums import ChannelType
from roomkit.models.hooks import HookTrigger
from roomkit.models.tool_call import ToolCallEvent
from roomkit.providers.ai.base import AITool
from roomkit.tools.validation import validate_tool_arguments

if TYPE_CHECKING:
    from roomkit.channels.ai._turn import Turn

__all__ = ["GateDecision", "gate"]

logger = logging.getLogger("roomkit.channels.ai")

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


async def gate(
    turn: Turn, call_id: str, name: str, arguments: dict[str, Any], tool: AITool | None
) -> GateDecision:
    """Run BEFORE_TOOL_USE for one call."""
    kit = turn.kit
    allow = GateDecision(True, arguments)
    if kit is None or not turn.room_id:
        return allow
    hooks = kit.hooks
    if not hooks.has_hooks(
        _TRIGGER, channel_type=ChannelType.AI, channel_id=turn.channel.channel_id
    ):
        await _announce(turn, call_id, name, allow)
        return allow
    ctx = await turn.context()
    if ctx is None:
        return GateDecision(False, arguments, f"Tool '{name}' denied: its room is unavailable.")
    event = ToolCallEvent(
        turn.channel.channel_id,
        ChannelType.AI,
        call_id,
        name,
        arguments,
        None,
        turn.room_id,
        actor_id=turn.actor_id,
    )
    outcome = await hooks.run_sync(
        _TRIGGER, event, ctx, channel_type=ChannelType.AI, channel_id=turn.channel.channel_id
    )
    if not outcome.allowed:
        reason = outcome.reason or f"Tool '{name}' denied by pre-execution hook."
        decision = GateDecision(False, arguments, reason, outcome.detail)
    else:
        decision = _rewrite(name, arguments, outcome.event, outcome.metadata, event, tool)
        if decision.allowed:
            hooks.run_async(
                _TRIGGER,
                event,
                ctx,
                channel_type=ChannelType.AI,
                channel_id=turn.channel.channel_id,
            )
    await _announce(turn, call_id, name, decision)
    return decision


def _rewrite(
    name: str,
    arguments: dict[str, Any],
    modified: Any,
    metadata: dict[str, Any],
    original: ToolCallEvent,
    tool: AITool | None,
) -> GateDecision:
    if "arguments" in metadata:
        new = metadata["arguments"]
    elif isinstance(modified, ToolCallEvent) and modified is not original:
        new = modified.arguments
    else:
        return GateDecision(True, arguments)
    if not isinstance(new, dict):
        logger.warning(
            "BEFORE_TOOL_USE hook returned non-object arguments for %s: denying the call", name
        )
        return GateDecision(False, arguments, f"Tool '{name}' denied by pre-execution hook.")
    if tool is not None:
        problem = validate_tool_arguments(tool.parameters, new)
        if problem is not None:
            return GateDecision(
                False, arguments, f"Invalid rewritten arguments for '{name}': {problem}"
            )
    return GateDecision(True, new)


async def _announce(turn: Turn, call_id: str, name: str, decision: GateDecision) -> None:
    kit = turn.kit
    if kit is not None and kit.has_listeners("before_tool_use"):
        await kit.emit(
            "before_tool_use",
            {
                "tool_name": name,
                "tool_call_id": call_id,
                "allowed": decision.allowed,
                "reason": decision.reason,
            },
            room_id=turn.room_id,
        )

"""Gate: BEFORE_TOOL_USE decides whether a checked call runs, and with which arguments.

The event carries the call site's channel type (``ai``, ``realtime_voice``, ``conference``),
its session and the actor the call is for. The trigger fails closed: a hook that raises,
times out or returns something that is not a ``HookResult`` refuses the call, with what
failed as the report's ``error_detail``. A rewrite under ``metadata["arguments"]`` is
validated against the tool's schema again. Listeners of ``before_tool_use`` hear each
decision.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roomkit.models.hooks import HookTrigger
from roomkit.models.tool_call import ToolCallEvent
from roomkit.tools import texts
from roomkit.tools.human_input.question_rules import question_problem
from roomkit.tools.validation import validate_tool_arguments

if TYPE_CHECKING:
    from roomkit.channels._calls.site import CallSite
    from roomkit.providers.ai.base import AITool

__all__ = ["GateDecision", "gate"]

_TRIGGER = HookTrigger.BEFORE_TOOL_USE


@dataclass(frozen=True, slots=True)
class GateDecision:
    """Whether the call runs, with which arguments, and if not, why."""

    allowed: bool
    """True when the call runs."""
    arguments: dict[str, Any]
    """The arguments it runs with (a hook's rewrite, or the call's own)."""
    reason: str | None = None
    """What the model reads when refused."""
    detail: str | None = None
    """What failed, when a hook failed closed."""


async def gate(
    site: CallSite, name: str, arguments: dict[str, Any], tool: AITool | None
) -> GateDecision:
    """Run BEFORE_TOOL_USE for one call at ``site``."""
    kit = site.kit
    allow = GateDecision(True, arguments)
    if kit is None or not site.room_id:
        return allow
    door, channel_id = site.channel_type, site.channel_id
    hooks = kit.hooks
    if not hooks.has_hooks(_TRIGGER, channel_type=door, channel_id=channel_id):
        await _announce(site, name, allow)
        return allow
    ctx = await site.contexts()
    if ctx is None:
        return GateDecision(False, arguments, texts.room_unavailable(name))
    event = site.event(name, arguments)
    outcome = await hooks.run_sync(_TRIGGER, event, ctx, channel_type=door, channel_id=channel_id)
    if not outcome.allowed:
        reason = outcome.reason or texts.denied(name)
        decision = GateDecision(False, arguments, reason, outcome.detail)
    else:
        decision = _rewrite(site, name, arguments, outcome.event, outcome.metadata, event, tool)
        if decision.allowed:
            hooks.run_async(_TRIGGER, event, ctx, channel_type=door, channel_id=channel_id)
    await _announce(site, name, decision)
    return decision


def _rewrite(
    site: CallSite,
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
        logging.getLogger(f"roomkit.channels.{site.channel_type}").warning(
            "BEFORE_TOOL_USE hook returned non-object arguments for %s: denying the call", name
        )
        return GateDecision(False, arguments, texts.denied(name))
    if tool is not None:
        problem = validate_tool_arguments(tool.parameters, new)
        if problem is None:
            problem = question_problem(name, tool.parameters, new)
        if problem is not None:
            return GateDecision(False, arguments, texts.invalid_rewrite(name, problem))
    return GateDecision(True, new)


async def _announce(site: CallSite, name: str, decision: GateDecision) -> None:
    kit = site.kit
    if kit is not None and kit.has_listeners("before_tool_use"):
        await kit.emit(
            "before_tool_use",
            {
                "tool_name": name,
                "tool_call_id": site.tool_call_id,
                "allowed": decision.allowed,
                "reason": decision.reason,
            },
            room_id=site.room_id,
        )

"""One voice call through its steps: declare -> validate -> gate -> serve -> report.

Every door runs this same pipeline. A name the session's model was not offered is refused
before any hook or handler; the arguments are validated against the tool's schema; the gate
(BEFORE_TOOL_USE) may refuse or rewrite them; the call is served; ON_TOOL_CALL hears how it
ended, once. A call cut while it runs (its session ended, the channel closed, the model gave it
up) is reported cancelled and the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import logging

from roomkit.channels.ai._outcome import CallOutcome, error_body, refused
from roomkit.channels.realtime_voice._gate import gate
from roomkit.channels.realtime_voice._live import VoiceCall
from roomkit.channels.realtime_voice._report import cut, report
from roomkit.channels.realtime_voice._serve import serve
from roomkit.tools.validation import validate_tool_arguments

__all__ = ["run_call"]

logger = logging.getLogger("roomkit.channels.realtime_voice")


async def run_call(call: VoiceCall) -> CallOutcome:
    """Serve ``call`` and report it; return the outcome the model reads."""
    try:
        outcome = _refusal(call)
        if outcome is None:
            arguments = call.arguments
            decision = await gate(call, call.live.tools[call.name], arguments)
            if decision.allowed:
                outcome = await serve(call, decision.arguments)
            else:
                body = error_body(decision.reason or "")
                outcome = refused(body, arguments, detail=decision.detail)
    except asyncio.CancelledError:
        await report(call, cut(call, call.live.cut_hint(call.call_id)))
        raise
    return await report(call, outcome)


def _refusal(call: VoiceCall) -> CallOutcome | None:
    """The channel's own refusals, before any hook or handler; ``None`` to go on."""
    name, arguments = call.name, call.arguments
    shown = arguments if isinstance(arguments, dict) else {}
    tool = call.live.tools.get(name)
    if tool is None:
        logger.warning("Provider requested undeclared tool %s (%s)", name, call.door)
        return refused(error_body(f"Tool '{name}' is not declared."), shown)
    problem = validate_tool_arguments(tool.parameters, arguments)
    if problem is not None:
        return refused(error_body(f"Invalid arguments for '{name}': {problem}"), shown)
    return None

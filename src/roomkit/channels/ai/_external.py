"""Route to the external handler: calls to tools the channel does not serve itself.

The handler decides (``process_tool_call``) and hears how each call ended:
``on_tool_result`` for a served call, ``on_tool_refused`` for one it refused, and at the
turn's teardown ``on_tool_cancelled`` for a call the turn cut before its decision arrived.
The channel reports a call itself when the handler raises, or when the handler's report does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from roomkit.channels.ai._outcome import (
    CallOutcome,
    cancelled,
    error_body,
    failed,
    refused,
    served,
)
from roomkit.channels.ai._report import report
from roomkit.providers.ai.base import AIToolCall
from roomkit.tools.context import ToolCallContext, _current_tool_call
from roomkit.tools.external import ToolDecision, call_on_tool_refused

if TYPE_CHECKING:
    from roomkit.channels.ai._turn import Turn

__all__ = ["run", "teardown"]

logger = logging.getLogger("roomkit.channels.ai")


async def run(turn: Turn, call: AIToolCall) -> CallOutcome:
    """Ask the external handler about ``call`` and report the outcome."""
    handler = turn.channel.external_tool_handler
    assert handler is not None
    name, arguments = call.name, call.arguments
    if call.partial:
        body = error_body(
            f"Tool '{name}' arguments were cut off: call it again with complete arguments."
        )
        return await report(turn, call.id, name, refused(body, arguments))
    _current_tool_call.set(ToolCallContext(turn.room_id, call.id, turn.channel.channel_id))
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
        kind = type(error).__name__
        outcome = failed(
            error_body(f"Tool '{name}' failed ({kind})"), arguments, detail=f"{kind}: {error}"
        )
        return await report(turn, call.id, name, outcome)
    del turn.unreported[call.id]
    if decision.modified_input is not None:
        arguments = decision.modified_input
    if not decision.approved:
        body = error_body(decision.reason or f"Tool '{name}' was denied")
        outcome = refused(body, arguments, detail=decision.detail)
        try:
            await call_on_tool_refused(
                handler,
                name,
                arguments,
                body,
                tool_call_id=call.id,
                room_id=turn.room_id,
                detail=decision.detail,
            )
        except Exception:
            logger.exception("%s.on_tool_refused failed", type(handler).__name__)
            await report(turn, call.id, name, outcome)
        return outcome
    result = decision.result if decision.result is not None else '{"approved": true}'
    outcome = served(result, arguments)
    try:
        await handler.on_tool_result(
            name, arguments, result, is_error=False, tool_call_id=call.id, room_id=turn.room_id
        )
    except Exception:
        logger.exception("%s.on_tool_result failed", type(handler).__name__)
        await report(turn, call.id, name, outcome)
    return outcome


async def teardown(turn: Turn) -> None:
    """Tell the handler about each call the turn cut before its decision arrived."""
    handler = turn.channel.external_tool_handler
    if handler is None or not turn.unreported:
        return
    pending, turn.unreported = turn.unreported, {}
    for call_id, (name, arguments) in pending.items():
        try:
            await handler.on_tool_cancelled(
                name, arguments, tool_call_id=call_id, room_id=turn.room_id
            )
        except Exception:
            logger.exception("%s.on_tool_cancelled failed", type(handler).__name__)
            outcome = cancelled(name, arguments, channel_closed=turn.channel.closing)
            await report(turn, call_id, name, outcome)

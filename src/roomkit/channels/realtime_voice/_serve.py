"""Serve: run a gated realtime call, human-input names first, then the host's tool handler.

Each call runs inside the tool context of its session: the room, the call's id, the channel,
and the person the call is for as the actor, so a person asked knows whom the question is
for; the request is made on the channel's door (``realtime_voice``, ``conference``). The
bound is ``tool_timeouts[name]`` when set, otherwise none for a human-input name (the
handler's own timeout applies) and ``tool_timeout_seconds`` for the rest. Whatever the tool
raises becomes the outcome the model reads; a bug's message stays out of the model's view
and goes to the observers as ``error_detail``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roomkit.channels.ai._outcome import CallOutcome
from roomkit.channels.ai._serve import run_tool
from roomkit.tools.context import ToolCallContext, tool_turn_context

if TYPE_CHECKING:
    from roomkit.channels.realtime_voice._call import RealtimeCall

__all__ = ["serve"]


async def serve(call: RealtimeCall, arguments: dict[str, Any]) -> CallOutcome:
    """Run the call under its bound and map how it ended."""
    channel = call.channel
    this_call = ToolCallContext(call.room_id, call.call_id, channel.channel_id)
    with tool_turn_context(
        room=call.live.room,
        actor_id=call.actor_id,
        tools=list(call.live.tools),
        call=this_call,
    ):
        return await run_tool(channel, call.name, arguments, channel.channel_type)

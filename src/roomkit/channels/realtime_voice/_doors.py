"""Doors: how a call enters a realtime channel, and how its result goes back out.

Every door of the voice channel, and the conference channel's function calls, spawn the call
in a task of its own, tracked by its session, so that the session ending, the channel closing
or the model cancelling the call can cut it. The result goes back
the way the call came: a provider's function call gets ``submit_tool_result``; a call
recovered from speech gets a silent ``inject_context``; a reasoning backend's call gets the
result as the return value of its ``call_tool``. Once the session is no longer open, nothing
is sent to the provider.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from roomkit.channels.ai._outcome import CallOutcome, error_body, failed
from roomkit.channels.realtime_voice._call import RealtimeCall, run_call
from roomkit.channels.realtime_voice._live import Door, LiveSession
from roomkit.channels.realtime_voice._reasoning import CallTool
from roomkit.channels.realtime_voice._report import cut, report

if TYPE_CHECKING:
    from roomkit.channels.realtime_voice.channel import RealtimeVoiceChannel

__all__ = ["call_tool_for", "caller_call", "new_call_id", "recovered_result", "spawn"]

logger = logging.getLogger("roomkit.channels.realtime_voice")


def new_call_id(door: Door) -> str:
    """A call id for a call the provider did not number (recovered, reasoning)."""
    return f"{door}-{uuid.uuid4().hex[:16]}"


def recovered_result(name: str, content: str) -> str:
    """The context text that gives a recovered call's result to the model."""
    return f"Result of {name}: {content}"


def caller_call(
    channel: RealtimeVoiceChannel,
    live: LiveSession,
    door: Door,
    call_id: str,
    name: str,
    arguments: Any,
) -> RealtimeCall:
    """A call in a voice session: the session's caller is the one it is for."""
    return RealtimeCall(channel, live, door, call_id, name, arguments, live.session.participant_id)


def spawn(call: RealtimeCall) -> asyncio.Task[CallOutcome]:
    """Serve ``call`` in a task tracked by its session; return the task."""
    name = f"{call.channel.channel_type}-call-{call.call_id}"
    task = asyncio.get_running_loop().create_task(_answer(call), name=name)
    call.live.track(call.call_id, task)
    return task


async def _answer(call: RealtimeCall) -> CallOutcome:
    try:
        outcome = await run_call(call)
    except Exception as error:
        # A bug in the pipeline must still give the model an answer, or it waits forever.
        logger.exception("Call %s to %s failed in the channel", call.call_id, call.name)
        kind = type(error).__name__
        body = error_body(f"Tool '{call.name}' failed ({kind})")
        outcome = failed(body, {}, detail=f"{kind}: {error}")
    if not call.live.open or call.door is Door.REASONING:
        return outcome
    provider, session = call.channel.provider, call.session
    try:
        if call.door is Door.FUNCTION_CALL:
            await provider.submit_tool_result(session, call.call_id, outcome.content)
        else:
            text = recovered_result(call.name, outcome.content)
            await provider.inject_context(session, text, silent=True)
    except Exception:
        logger.exception("Could not give the result of call %s to the provider", call.call_id)
    return outcome


def call_tool_for(channel: RealtimeVoiceChannel, live: LiveSession) -> CallTool:
    """The ``call_tool`` a reasoning backend uses in ``live``'s session."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        call = caller_call(
            channel, live, Door.REASONING, new_call_id(Door.REASONING), name, arguments
        )
        if not live.open:
            return (await report(call, cut(call, live.cut_hint(call.call_id)))).content
        try:
            return (await spawn(call)).content
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            # The call was cut under the backend (the session ended): it reads why.
            return cut(call, live.cut_hint(call.call_id)).content

    return call_tool

"""Doors: how a call enters a realtime channel, runs, and how its result goes back out.

Every door of the voice channel, and the conference channel's function calls, spawn the call
in a task of its own, tracked by its session, so that the session ending, the channel closing
or the model cancelling the call can cut it. The call runs through the one call pipeline
(``channels/_calls``) at a call site naming the session, its room and the person the call is
for. The result goes back the way the call came: a provider's function call gets
``submit_tool_result``; a call recovered from speech gets a silent ``inject_context``; a
reasoning backend's call gets the result as the return value of its ``call_tool``. Once the
session is no longer open, nothing is sent to the provider.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from roomkit.channels._calls.checks import crowded
from roomkit.channels._calls.outcome import CallOutcome, cut
from roomkit.channels._calls.pipeline import run_call
from roomkit.channels._calls.report import report
from roomkit.channels._calls.serve import ToolServer, crashed
from roomkit.channels._calls.site import CallSite, room_context
from roomkit.channels._voice.live import Door, LiveSession
from roomkit.channels._voice.reasoning import CallTool
from roomkit.tools import texts

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit
    from roomkit.models.enums import ChannelType
    from roomkit.voice.realtime.base import RealtimeProvider

__all__ = ["VoiceCall", "VoiceServer", "call_tool_for", "new_call_id", "spawn", "take"]

logger = logging.getLogger("roomkit.channels.realtime_voice")


class VoiceServer(ToolServer, Protocol):
    """What the doors read of the channel (or plugged config) serving a session's calls."""

    @property
    def channel_id(self) -> str:
        """The channel's id, on every event."""
        ...

    @property
    def channel_type(self) -> ChannelType:
        """The door's type: the events' ``channel_type`` and the requests' door."""
        ...

    @property
    def provider(self) -> RealtimeProvider:
        """The model the sessions run on, which a call's result goes back to."""
        ...

    @property
    def kit(self) -> RoomKit | None:
        """The kit the channel is registered with."""
        ...


@dataclass(frozen=True, slots=True)
class VoiceCall:
    """One call on one door of a realtime channel."""

    server: VoiceServer
    """The channel serving it."""
    live: LiveSession
    """The session it belongs to."""
    door: Door
    """How it reached the channel, and so how its result goes back."""
    call_id: str
    """The provider's call id, or one the channel made for a recovered or reasoning call."""
    name: str
    """The tool called."""
    arguments: Any
    """The arguments as written (checked before anything trusts them)."""
    actor_id: str | None
    """Whom the call is for (the caller, the participant speaking), or ``None``."""

    def site(self) -> CallSite:
        """Where the call is served: its session, room and person."""
        server, session = self.server, self.live.session
        return CallSite(
            server.kit,
            server.channel_id,
            server.channel_type,
            self.live.room,
            self.actor_id,
            self.call_id,
            self.live.tools,
            functools.partial(room_context, server.kit, session.room_id),
            session=session,
        )

    def cut_hint(self) -> str:
        """Why the call has no result, once it is cut."""
        return self.live.cut_hint(self.call_id)

    async def run(self, refusal: str | None = None) -> CallOutcome:
        """Run the call through the pipeline (refused with ``refusal``, if given); return
        the outcome the model reads."""
        return await run_call(
            self.site(),
            self.server,
            self.name,
            self.arguments,
            cut_hint=self.cut_hint,
            refusal=refusal,
        )


def new_call_id(door: Door) -> str:
    """A call id for a call the provider did not number (recovered, reasoning)."""
    return f"{door}-{uuid.uuid4().hex[:16]}"


def take(call: VoiceCall) -> None:
    """Serve the provider's ``call``, unless a call of its id is already being served."""
    if call.call_id in call.live.calls:
        logger.warning("Call id %s is already being served: the repeat is ignored", call.call_id)
        return
    spawn(call)


def spawn(call: VoiceCall) -> asyncio.Task[CallOutcome]:
    """Serve ``call`` in a task tracked by its session; return the task. A call made while
    the session runs :data:`~roomkit.channels._calls.checks.MAX_CALLS_AT_ONCE` calls already
    is refused."""
    name = f"{call.server.channel_type}-call-{call.call_id}"
    refusal = crowded(call.name, call.live.running)
    task = asyncio.get_running_loop().create_task(_answer(call, refusal), name=name)
    call.live.track(call.call_id, task)
    return task


async def _answer(call: VoiceCall, refusal: str | None) -> CallOutcome:
    try:
        outcome = await call.run(refusal)
    except Exception as error:
        # A bug in the pipeline must still give the model an answer, or it waits forever.
        logger.exception("Call %s to %s failed in the channel", call.call_id, call.name)
        outcome = crashed(call.name, {}, error)
    # The model may call again as soon as it reads the result: this call counts no more.
    call.live.answered.add(call.call_id)
    if not call.live.open or call.door is Door.REASONING:
        return outcome
    provider, session = call.server.provider, call.live.session
    try:
        if call.door is Door.FUNCTION_CALL:
            await provider.submit_tool_result(session, call.call_id, outcome.content)
        else:
            text = texts.recovered_result(call.name, outcome.content)
            await provider.inject_context(session, text, silent=True)
    except Exception:
        logger.exception("Could not give the result of call %s to the provider", call.call_id)
    return outcome


def call_tool_for(server: VoiceServer, live: LiveSession, actor_id: str | None) -> CallTool:
    """The ``call_tool`` a reasoning backend uses in ``live``'s session, for ``actor_id``."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        call_id = new_call_id(Door.REASONING)
        call = VoiceCall(server, live, Door.REASONING, call_id, name, arguments, actor_id)
        if not live.open:
            cut_call = cut(name, arguments, call.cut_hint())
            return (await report(call.site(), name, cut_call)).content
        try:
            return (await spawn(call)).content
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            # The call was cut under the backend (the session ended): it reads why.
            return cut(name, arguments, call.cut_hint()).content

    return call_tool

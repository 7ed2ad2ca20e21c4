"""One realtime call through its steps: declare -> validate -> gate -> serve -> report.

Every door of a realtime channel runs this same pipeline, the voice channel's and the
conference's alike. A name the session's model was not offered is refused before any hook or
handler; the arguments are validated against the tool's schema; the gate (BEFORE_TOOL_USE)
may refuse or rewrite them; the call is served; ON_TOOL_CALL hears how it ended, once. A call
cut while it runs (its session ended, the channel closed, the model gave it up) is reported
cancelled and the cancellation goes on.

The steps read a call through :class:`RealtimeCall` and the channel serving it through
:class:`ServingChannel`, so each channel brings its own door type, tool handler and bounds:
the voice channel serves its callers' calls, the conference channel the calls of a room's
session, for the participant speaking.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from roomkit.channels.ai._outcome import CallOutcome, error_body, refused
from roomkit.channels.realtime_voice._gate import gate
from roomkit.channels.realtime_voice._report import cut, report
from roomkit.channels.realtime_voice._serve import serve
from roomkit.tools.validation import validate_tool_arguments

if TYPE_CHECKING:
    from roomkit.channels.realtime_voice._live import Door, LiveSession
    from roomkit.core.framework import RoomKit
    from roomkit.models.enums import ChannelType
    from roomkit.models.hooks import RoomContext
    from roomkit.tools.compose import ToolHandler
    from roomkit.tools.human_input import HumanInputToolHandler
    from roomkit.voice.realtime.base import RealtimeProvider, RealtimeSession

__all__ = ["RealtimeCall", "ServingChannel", "run_call"]

logger = logging.getLogger("roomkit.channels.realtime_voice")


class ServingChannel(Protocol):
    """What the steps read of the channel serving a call."""

    human_input_handler: HumanInputToolHandler | None
    """The tools that ask a person, served first."""

    @property
    def channel_id(self) -> str:
        """The channel's id, on every event."""
        ...

    @property
    def channel_type(self) -> ChannelType:
        """The door's type: the events' ``channel_type`` and the requests' door."""
        ...

    @property
    def tool_handler(self) -> ToolHandler | None:
        """The host's tool handler, read at every call."""
        ...

    @property
    def provider(self) -> RealtimeProvider:
        """The model the channel's sessions run on, which a call's result goes back to."""
        ...

    @property
    def kit(self) -> RoomKit | None:
        """The kit the channel is registered with."""
        ...

    def call_bound(self, name: str) -> float | None:
        """How long a call to ``name`` may run, or ``None`` for no channel bound."""
        ...


@dataclass(frozen=True, slots=True)
class RealtimeCall:
    """One call on one door of a realtime channel: what every step reads."""

    channel: ServingChannel
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
    """The arguments as written (validated before anything trusts them)."""
    actor_id: str | None
    """Whom the call is for (the caller, the participant speaking), or ``None`` when nobody
    is known."""

    @property
    def session(self) -> RealtimeSession:
        """The call's session."""
        return self.live.session

    @property
    def room_id(self) -> str:
        """The session's room."""
        return self.live.session.room_id

    @property
    def kit(self) -> RoomKit | None:
        """The kit the channel is registered with."""
        return self.channel.kit

    async def context(self) -> RoomContext | None:
        """The room context hooks receive; ``None`` when it cannot be built."""
        kit = self.kit
        if kit is None:
            return None
        try:
            return await kit.room_context(self.room_id)
        except Exception:
            logger.exception("No room context for room %s", self.room_id)
            return None


async def run_call(call: RealtimeCall) -> CallOutcome:
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


def _refusal(call: RealtimeCall) -> CallOutcome | None:
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

"""A conference's calls: the plugged config as the call steps see it, one call, and its door.

A :class:`Plugged` is a realtime config plugged into a conference channel: it serves the
calls of the sessions started under it (human-input names first, then the config's
``tool_handler``, read at every call) and keeps the wiring that unplugging undoes. A
:class:`ConferenceCall` is one provider function call in a room's session, for the
participant who was speaking when the model made it. :func:`spawn` serves a call in a task
tracked by its session, through the realtime call pipeline, and submits the result to the
provider, unless the session stopped taking calls in the meantime: then nothing is sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roomkit.channels.ai._outcome import CallOutcome, error_body, failed
from roomkit.channels.conference.config import ConferenceRealtimeConfig
from roomkit.channels.realtime_voice._call import run_call
from roomkit.channels.realtime_voice._live import LiveSession
from roomkit.models.enums import ChannelType
from roomkit.models.hooks import RoomContext
from roomkit.tools.compose import ToolHandler
from roomkit.tools.human_input import HumanInputToolHandler
from roomkit.voice.realtime.base import RealtimeSession

if TYPE_CHECKING:
    from roomkit.channels.conference.channel import ConferenceChannel
    from roomkit.core.framework import RoomKit

__all__ = ["ConferenceCall", "Plugged", "spawn"]

logger = logging.getLogger("roomkit.channels.conference")


class Plugged:
    """A realtime config plugged into a conference channel, and the wiring to undo.

    Args:
        conference: the channel it is plugged into.
        config: the config.
    """

    def __init__(self, conference: ConferenceChannel, config: ConferenceRealtimeConfig) -> None:
        self.conference = conference
        self.config = config
        self.human_input_handler: HumanInputToolHandler | None = config.human_input_handler
        """The tools that ask a person, served first (fixed for the config's life)."""
        self.registration: int | None = None
        """The token of the route to ON_USER_INPUT_REQUIRED, once the kit is known."""
        self.unsubscribe: list[Callable[[], None]] = []
        """Unregisters the channel's provider callbacks."""

    @property
    def channel_id(self) -> str:
        """The conference channel's id."""
        return self.conference.channel_id

    @property
    def channel_type(self) -> ChannelType:
        """Always ``conference``: the door of every call and request."""
        return ChannelType.CONFERENCE

    @property
    def tool_handler(self) -> ToolHandler | None:
        """The config's host tool handler, as it is now."""
        return self.config.tool_handler

    def call_bound(self, name: str) -> float | None:
        """How long a call to ``name`` may run, or ``None`` for no channel bound."""
        return self.config.call_bound(name)


@dataclass(frozen=True, slots=True)
class ConferenceCall:
    """One provider function call in a room's realtime session."""

    channel: Plugged
    """The plugged config serving it."""
    live: LiveSession
    """The room's session."""
    call_id: str
    """The provider's call id."""
    name: str
    """The tool called."""
    arguments: Any
    """The arguments as written (validated before anything trusts them)."""
    actor_id: str | None
    """The participant speaking when the call was made, or ``None``."""
    door: str = "function_call"
    """How the call reached the channel, for logs."""

    @property
    def session(self) -> RealtimeSession:
        """The room's session."""
        return self.live.session

    @property
    def room_id(self) -> str:
        """The session's room."""
        return self.live.session.room_id

    @property
    def kit(self) -> RoomKit | None:
        """The kit the conference channel is registered with."""
        return self.channel.conference.kit

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


def spawn(call: ConferenceCall) -> asyncio.Task[CallOutcome]:
    """Serve ``call`` in a task tracked by its session; return the task."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(_answer(call), name=f"conference-call-{call.call_id}")
    call.live.track(call.call_id, task)
    return task


async def _answer(call: ConferenceCall) -> CallOutcome:
    try:
        outcome = await run_call(call)
    except Exception as error:
        # A bug in the pipeline must still give the model an answer, or it waits forever.
        logger.exception("Call %s to %s failed in the channel", call.call_id, call.name)
        kind = type(error).__name__
        body = error_body(f"Tool '{call.name}' failed ({kind})")
        outcome = failed(body, {}, detail=f"{kind}: {error}")
    if not call.live.open:
        return outcome
    try:
        await call.channel.config.provider.submit_tool_result(
            call.session, call.call_id, outcome.content
        )
    except Exception:
        logger.exception("Could not give the result of call %s to the provider", call.call_id)
    return outcome

"""RealtimeVoiceChannel: a speech-to-speech model talking with callers, with its tools.

The channel opens sessions on a transport (the caller's audio) and a provider (the model),
and serves the model's tool calls on three doors: the provider's function call, a call
recovered from the model's speech, and a reasoning backend's call. Every door declares,
validates, gates, serves and reports the same way; human-input tools are served first, under
the handler's own timeout, and a person is asked on the ``realtime_voice`` door.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.declare import ToolChannel, check_kind, host_tools
from roomkit.channels._voice.doors import VoiceCall, call_tool_for, new_call_id, spawn, take
from roomkit.channels._voice.live import Door, LiveSession
from roomkit.channels._voice.reasoning import ReasoningBackend
from roomkit.channels.realtime_voice._recovery import recover_calls
from roomkit.core.exceptions import ChannelClosedError, ChannelStateError, SessionNotOpenError
from roomkit.models.enums import ChannelType
from roomkit.models.room import Participant
from roomkit.providers.ai.base import AITool
from roomkit.tools.compose import ToolHandler
from roomkit.tools.human_input import HumanInputToolHandler
from roomkit.tools.texts import CHANNEL_CLOSED, MODEL_CANCELLED, SESSION_ENDED
from roomkit.voice.realtime.base import RealtimeProvider, RealtimeSession, RealtimeTransport

if TYPE_CHECKING:
    pass

__all__ = ["RealtimeVoiceChannel"]

logger = logging.getLogger("roomkit.channels.realtime_voice")


class RealtimeVoiceChannel(ToolChannel):
    """Realtime voice conversations in rooms, with tools that may ask the caller.

    Args:
        channel_id: the channel's id.
        provider: the speech-to-speech model.
        transport: what carries the callers' audio.
        system_prompt: the model's instructions in every session.
        tools: definitions of the host's tools (``AITool`` objects or dicts), declared to
            every session.
        tool_handler: serves the host's tools (``await tool_handler(name, arguments)``).
        human_input_handler: tools that ask a person; declared to every session and served
            by the channel before ``tool_handler``, under the handler's own timeout.
        tool_timeout_seconds: the bound of a host tool call (``None``: unbounded).
        tool_timeouts: per-tool bounds, overriding the defaults (human-input names included).
        tool_recovery: serve the calls the model speaks (``call:name{key:value}`` in its
            transcript) instead of making.
        reasoning_backend: reasons for the model when asked through :meth:`reason`, with the
            session's tools.

    Raises:
        ValueError: a host tool takes a human-input tool's name, two tools share a name, a
            tool's name is not letters, digits, ``_`` and ``-`` (1 to 64 of them), its
            parameters are no JSON Schema for an object, or a bound is not positive.
    """

    channel_type = ChannelType.REALTIME_VOICE

    def __init__(
        self,
        channel_id: str,
        *,
        provider: RealtimeProvider,
        transport: RealtimeTransport,
        system_prompt: str | None = None,
        tools: Sequence[AITool | Mapping[str, Any]] | None = None,
        tool_handler: ToolHandler | None = None,
        human_input_handler: HumanInputToolHandler | None = None,
        tool_timeout_seconds: float | None = 10.0,
        tool_timeouts: Mapping[str, float | None] | None = None,
        tool_recovery: bool = True,
        reasoning_backend: ReasoningBackend | None = None,
    ) -> None:
        super().__init__(
            channel_id,
            tools=host_tools(tools),
            tool_handler=tool_handler,
            human_input_handler=human_input_handler,
            tool_timeout_seconds=tool_timeout_seconds,
            tool_timeouts=tool_timeouts,
        )
        check_kind("provider", provider, RealtimeProvider)
        check_kind("transport", transport, RealtimeTransport)
        if reasoning_backend is not None and not callable(
            getattr(reasoning_backend, "reason", None)
        ):
            raise TypeError(
                "reasoning_backend must have an async reason(session, text, *, tools, "
                f"call_tool) method, got {type(reasoning_backend).__name__}"
            )
        self.provider = provider
        self.transport = transport
        self.system_prompt = system_prompt
        self.tool_recovery = bool(tool_recovery)
        self.reasoning_backend = reasoning_backend
        self._sessions: dict[str, LiveSession] = {}
        self._unsubscribe = self._listen()

    def _listen(self) -> list[Callable[[], None]]:
        """Take what the provider and the transport report; the undo of each subscription."""
        provider = self.provider
        return [
            provider.on_tool_call(self._on_tool_call),
            provider.on_transcription(self._on_transcription),
            provider.on_tool_call_cancelled(self._on_tool_call_cancelled),
            provider.on_error(self._on_error),
            self.transport.on_client_disconnected(self.end_session),
        ]

    # -- sessions ----------------------------------------------------------------------------

    @property
    def sessions(self) -> list[RealtimeSession]:
        """The sessions running now."""
        return [live.session for live in self._sessions.values()]

    async def start_session(
        self,
        room_id: str,
        participant_id: str,
        connection: Any,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> RealtimeSession:
        """Open a session for ``participant_id`` in ``room_id`` on ``connection``.

        The caller joins the room's roster and is the actor of every call the session makes.
        The session runs until :meth:`end_session`, the caller's disconnection, or
        :meth:`close`; a caller who hangs up while it starts gets it back already ended,
        disconnected from both sides.

        Raises:
            ChannelNotRegisteredError: the channel is not registered.
            ChannelClosedError: the channel is closed.
            KeyError: no such room, or the channel is not attached to it.
            ValueError: ``participant_id`` is empty.
        """
        kit = self.registered_kit()
        self._check_open()
        if not isinstance(participant_id, str) or not participant_id:
            raise ValueError(f"participant_id must be a non-empty string, got {participant_id!r}")
        room = await self.attached_room(room_id)
        await kit.store.add_participant(Participant(participant_id, room_id))
        # Closed while the room was read: the closing saw no session to end.
        self._check_open()
        tools = self._tools
        self.warn_unoffered(tools)
        session = RealtimeSession.new(room_id, participant_id, self.channel_id, metadata)
        live = LiveSession(session, room, tools)
        # Listed before the caller is accepted, so that a hang-up from then on ends it.
        self._sessions[session.id] = live
        try:
            await self.transport.accept(session, connection)
            await live.connect(self.provider, self.system_prompt)
        except BaseException as exc:
            if self._sessions.pop(session.id, None) is not live:
                # Ended while it started (the caller hung up, the channel closed): the ending
                # hung up both sides, and the failure was its doing.
                if isinstance(exc, Exception):
                    return session
                raise
            await live.finish(SESSION_ENDED, self.provider, self.transport)
            raise
        return session

    def _check_open(self) -> None:
        if self.closing:
            raise ChannelClosedError(f"Channel {self.channel_id} is closed: start no new sessions")

    async def end_session(self, session: RealtimeSession) -> None:
        """End ``session``: cut its open calls (their requests are withdrawn, nothing more is
        sent to the provider), then hang up both sides. Ending it again does nothing."""
        live = self._sessions.pop(session.id, None)
        if live is not None:
            await live.finish(SESSION_ENDED, self.provider, self.transport)

    def _open_session(self, session: RealtimeSession) -> LiveSession | None:
        live = self._sessions.get(session.id)
        if live is None or not live.open:
            logger.debug("Event for session %s, which is not open here: ignored", session.id)
            return None
        return live

    # -- the doors ---------------------------------------------------------------------------

    async def _on_tool_call(
        self, session: RealtimeSession, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        live = self._open_session(session)
        if live is not None:
            take(self._call(live, Door.FUNCTION_CALL, call_id, name, arguments))

    async def _on_transcription(
        self, session: RealtimeSession, text: str, role: str, final: bool
    ) -> None:
        # Only the model's finished utterances: a caller saying "call:..." calls nothing.
        if not (self.tool_recovery and final and role == "assistant"):
            return
        live = self._open_session(session)
        if live is None:
            return
        for found in recover_calls(text):
            call_id = new_call_id(Door.RECOVERED)
            spawn(self._call(live, Door.RECOVERED, call_id, found.name, found.arguments))

    def _call(
        self, live: LiveSession, door: Door, call_id: str, name: str, arguments: Any
    ) -> VoiceCall:
        """A call in a voice session: the session's caller is the one it is for."""
        return VoiceCall(self, live, door, call_id, name, arguments, live.session.participant_id)

    async def _on_tool_call_cancelled(self, session: RealtimeSession, call_ids: list[str]) -> None:
        live = self._sessions.get(session.id)
        if live is not None:
            await live.cut_calls(list(call_ids), MODEL_CANCELLED)

    async def _on_error(self, session: RealtimeSession, code: str, message: str) -> None:
        logger.warning(
            "Provider %s reported an error in session %s: %s: %s",
            self.provider.name,
            session.id,
            code,
            message,
        )

    async def reason(self, session: RealtimeSession, text: str) -> str:
        """Hand ``text`` to the reasoning backend, with the session's tools; return its answer.

        The backend's calls go through this channel's pipeline on the ``realtime_voice``
        door; a call cut because the session ended reads as cancelled.

        Raises:
            ChannelStateError: the channel has no reasoning backend.
            SessionNotOpenError: the session is not open.
        """
        backend = self.reasoning_backend
        if backend is None:
            raise ChannelStateError(
                f"Channel {self.channel_id} has no reasoning backend: pass reasoning_backend="
            )
        live = self._open_session(session)
        if live is None:
            raise SessionNotOpenError(
                f"Session {session.id} is not open on channel {self.channel_id}: "
                "start_session() a new one"
            )
        call_tool = call_tool_for(self, live, live.session.participant_id)
        return await backend.reason(
            session, text, tools=list(live.tools.values()), call_tool=call_tool
        )

    # -- closing -----------------------------------------------------------------------------

    async def _cut_running(self) -> None:
        lives = list(self._sessions.values())
        self._sessions.clear()
        if lives:
            ends = (live.finish(CHANNEL_CLOSED, self.provider, self.transport) for live in lives)
            await asyncio.gather(*ends)
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()

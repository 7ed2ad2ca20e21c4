"""The interfaces between a realtime voice channel and its back ends, and the session they share.

A :class:`RealtimeTransport` carries the caller's audio (a WebSocket, a SIP leg, a browser
connection); a :class:`RealtimeProvider` is the speech-to-speech model on the other side. The
channel opens a :class:`RealtimeSession` on both, then listens: the provider reports the
model's tool calls, its transcripts and the calls it cancels; the transport reports the caller
hanging up. The channel answers a call with :meth:`RealtimeProvider.submit_tool_result`, or,
for a call it recovered from the model's speech, with :meth:`RealtimeProvider.inject_context`.
A provider that loses the model's side of a session (its connection drops) says so on the
session itself (:meth:`RealtimeSession.on_lost`), where the channel running it listens.

Implementations subclass the two ABCs and call the ``_fire_*`` methods when their back end
reports something; the registries of callbacks live here, so every implementation keeps them
the same way.
"""

from __future__ import annotations

import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum, unique
from typing import Any, TypedDict, Unpack

from roomkit.models.clock import utcnow
from roomkit.voice.callbacks import Callbacks

__all__ = [
    "ClientDisconnectedCallback",
    "ConnectOptions",
    "ErrorCallback",
    "RealtimeProvider",
    "RealtimeSession",
    "RealtimeSessionState",
    "RealtimeTransport",
    "SessionLostCallback",
    "ToolCallCallback",
    "ToolCallCancelledCallback",
    "TranscriptionCallback",
]

logger = logging.getLogger("roomkit.voice.realtime")


@unique
class RealtimeSessionState(StrEnum):
    """Where a session is in its life."""

    CONNECTING = "connecting"
    """The transport accepted the caller; the provider is being connected."""
    ACTIVE = "active"
    """Both back ends are connected: calls are served and answered."""
    ENDING = "ending"
    """The session is closing: open calls are being cut, nothing more is sent."""
    ENDED = "ended"
    """The session is over."""


@dataclass(eq=False)
class RealtimeSession:
    """One caller's live conversation with the model, in one room.

    Sessions compare by identity: two objects are the same session only if they are the same
    object, whatever their fields say.
    """

    id: str
    """The session's id."""
    room_id: str
    """The room the conversation belongs to."""
    participant_id: str
    """The caller: the actor of every tool call the session makes."""
    channel_id: str
    """The channel that owns the session."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data the application attached when starting the session."""
    state: RealtimeSessionState = RealtimeSessionState.CONNECTING
    """Where the session is in its life; the channel moves it along."""
    created_at: datetime = field(default_factory=utcnow)
    """When the session was started (UTC)."""

    @classmethod
    def new(
        cls,
        room_id: str,
        participant_id: str,
        channel_id: str,
        metadata: dict[str, Any] | None = None,
    ) -> RealtimeSession:
        """A session with a fresh id, in the ``connecting`` state."""
        return cls(uuid.uuid4().hex, room_id, participant_id, channel_id, dict(metadata or {}))

    def __post_init__(self) -> None:
        # Listeners, not data: kept out of the fields, so copies and dumps leave them alone.
        self._lost: Callbacks[SessionLostCallback] = Callbacks("session lost", logger)

    @property
    def live(self) -> bool:
        """True while the session is connecting or active."""
        return self.state in (RealtimeSessionState.CONNECTING, RealtimeSessionState.ACTIVE)

    def on_lost(self, callback: SessionLostCallback) -> Callable[[], None]:
        """Call ``callback`` if the provider loses the model's side of this session.

        Nothing can be sent to the model afterwards. Returns a function that unregisters
        the callback.
        """
        return self._lost.add(callback)


ToolCallCallback = Callable[[RealtimeSession, str, str, dict[str, Any]], Awaitable[None]]
"""``await cb(session, call_id, name, arguments)``: the model called a tool (the provider
parses the arguments from JSON; they are validated by the channel, never trusted)."""
TranscriptionCallback = Callable[[RealtimeSession, str, str, bool], Awaitable[None]]
"""``await cb(session, text, role, final)``: speech was transcribed (role ``"assistant"``
for the model, ``"user"`` for the caller; ``final`` once the utterance is complete)."""
ToolCallCancelledCallback = Callable[[RealtimeSession, list[str]], Awaitable[None]]
"""``await cb(session, call_ids)``: the model gave up these calls (e.g. the caller barged in)."""
ErrorCallback = Callable[[RealtimeSession, str, str], Awaitable[None]]
"""``await cb(session, code, message)``: the provider reported an error."""
ClientDisconnectedCallback = Callable[[RealtimeSession], Awaitable[None]]
"""``await cb(session)``: the caller's connection went away."""
SessionLostCallback = Callable[[RealtimeSession, str], Awaitable[None]]
"""``await cb(session, reason)``: the provider lost the model's side of the session (its
connection dropped); nothing more can be sent to the model in it."""


class ConnectOptions(TypedDict, total=False):
    """The keywords of :meth:`RealtimeProvider.connect`; each may be left out."""

    system_prompt: str | None
    """The model's instructions; ``None`` by default."""
    tools: Sequence[dict[str, Any]]
    """The tools the model may call, as ``{"name", "description", "parameters"}`` dicts
    (``parameters`` is a JSON Schema); none by default."""


class RealtimeProvider(ABC):
    """A speech-to-speech model serving many sessions.

    Subclasses implement the four coroutines and call :meth:`_fire_tool_call`,
    :meth:`_fire_transcription`, :meth:`_fire_tool_call_cancelled` and :meth:`_fire_error`
    as the model reports those events, and :meth:`_fire_session_lost` when a session's
    connection to the model drops; each returns once every listener has taken the event.
    """

    full_duplex: bool = False
    """True for a model that listens while it speaks, and hands its reasoning (and the tools
    that go with it) to a reasoning backend rather than calling functions itself."""

    def __init__(self) -> None:
        self._tool_calls: Callbacks[ToolCallCallback] = Callbacks("tool call", logger)
        self._transcriptions: Callbacks[TranscriptionCallback] = Callbacks("transcription", logger)
        self._cancellations: Callbacks[ToolCallCancelledCallback] = Callbacks(
            "tool call cancellation", logger
        )
        self._errors: Callbacks[ErrorCallback] = Callbacks("error", logger)

    @property
    def name(self) -> str:
        """The provider's name, for logs."""
        return type(self).__name__

    @abstractmethod
    async def connect(self, session: RealtimeSession, **options: Unpack[ConnectOptions]) -> None:
        """Open the model's side of ``session``.

        Args:
            session: the session to open.
            **options: the :class:`ConnectOptions`, each optional: ``system_prompt`` (the
                model's instructions, ``None`` by default) and ``tools`` (none by default).
        """

    @abstractmethod
    async def submit_tool_result(self, session: RealtimeSession, call_id: str, result: str) -> None:
        """Give the model the result of its call ``call_id``."""

    @abstractmethod
    async def inject_context(
        self, session: RealtimeSession, text: str, *, silent: bool = True
    ) -> None:
        """Add ``text`` to the model's context.

        Args:
            session: the session whose model reads it.
            text: what to add.
            silent: add it without prompting the model to speak.
        """

    @abstractmethod
    async def disconnect(self, session: RealtimeSession) -> None:
        """Close the model's side of ``session``."""

    def on_tool_call(self, callback: ToolCallCallback) -> Callable[[], None]:
        """Call ``callback`` for every tool call; returns a function that unregisters it."""
        return self._tool_calls.add(callback)

    def on_transcription(self, callback: TranscriptionCallback) -> Callable[[], None]:
        """Call ``callback`` for every transcript; returns a function that unregisters it."""
        return self._transcriptions.add(callback)

    def on_tool_call_cancelled(self, callback: ToolCallCancelledCallback) -> Callable[[], None]:
        """Call ``callback`` when the model gives calls up; returns its unregister function."""
        return self._cancellations.add(callback)

    def on_error(self, callback: ErrorCallback) -> Callable[[], None]:
        """Call ``callback`` for every provider error; returns its unregister function."""
        return self._errors.add(callback)

    async def _fire_tool_call(
        self, session: RealtimeSession, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        await self._tool_calls.fire(session, call_id, name, arguments)

    async def _fire_transcription(
        self, session: RealtimeSession, text: str, role: str, final: bool
    ) -> None:
        await self._transcriptions.fire(session, text, role, final)

    async def _fire_tool_call_cancelled(
        self, session: RealtimeSession, call_ids: list[str]
    ) -> None:
        await self._cancellations.fire(session, call_ids)

    async def _fire_error(self, session: RealtimeSession, code: str, message: str) -> None:
        await self._errors.fire(session, code, message)

    async def _fire_session_lost(self, session: RealtimeSession, reason: str) -> None:
        await session._lost.fire(session, reason)


class RealtimeTransport(ABC):
    """Carries the callers' audio: accepts a connection into a session, and hangs it up.

    Subclasses call :meth:`_fire_client_disconnected` when a caller's connection goes away.
    """

    def __init__(self) -> None:
        self._disconnects: Callbacks[ClientDisconnectedCallback] = Callbacks(
            "client disconnect", logger
        )

    @abstractmethod
    async def accept(self, session: RealtimeSession, connection: Any) -> None:
        """Take ``connection`` (whatever the transport carries calls on) into ``session``."""

    @abstractmethod
    async def disconnect(self, session: RealtimeSession) -> None:
        """Hang up the caller of ``session``."""

    def on_client_disconnected(self, callback: ClientDisconnectedCallback) -> Callable[[], None]:
        """Call ``callback`` when a caller goes away; returns a function that unregisters it."""
        return self._disconnects.add(callback)

    async def _fire_client_disconnected(self, session: RealtimeSession) -> None:
        await self._disconnects.fire(session)

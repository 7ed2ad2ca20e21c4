"""Mock realtime back ends for tests and examples.

:class:`MockRealtimeProvider` records what the channel asks of the model and lets a test play
the model's side: a tool call, a transcript, a cancellation, an error, the connection to the
model dropping. Each ``simulate_*`` coroutine returns once the channel has taken the event; it
never waits for a tool's result, since the channel serves calls in tasks of its own. To wait
for a result, await :meth:`MockRealtimeProvider.wait_for_tool_result` or
:meth:`MockRealtimeProvider.wait_for_injection`.

:class:`MockRealtimeTransport` records accepted and hung-up sessions and plays the caller
hanging up.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Unpack

from roomkit.voice.realtime.base import (
    ConnectOptions,
    RealtimeProvider,
    RealtimeSession,
    RealtimeTransport,
)

__all__ = ["MockCall", "MockRealtimeProvider", "MockRealtimeTransport"]


@dataclass(frozen=True, slots=True)
class MockCall:
    """One method call a mock received."""

    method: str
    """The method's name, e.g. ``"connect"``."""
    args: dict[str, Any] = field(default_factory=dict)
    """Its arguments, by name."""


class MockRealtimeProvider(RealtimeProvider):
    """A scripted speech-to-speech model that records everything the channel sends it.

    Args:
        model: the model name it reports; ``"mock"`` by default.
        full_duplex: what :attr:`full_duplex` reports.

    Attributes:
        calls: every method call, oldest first.
        tool_results: every submitted result, as ``(session_id, call_id, result)``.
        injected: every injected context, as ``(session_id, text)``.
        sessions: the sessions connected and not yet disconnected, by id.
    """

    def __init__(self, model: str | None = None, *, full_duplex: bool = False) -> None:
        super().__init__()
        self.model = model or "mock"
        self.full_duplex = full_duplex
        self.calls: list[MockCall] = []
        self.tool_results: list[tuple[str, str, str]] = []
        self.injected: list[tuple[str, str]] = []
        self.sessions: dict[str, RealtimeSession] = {}
        self._changed = asyncio.Condition()

    @property
    def name(self) -> str:
        """Always ``"mock"``."""
        return "mock"

    async def connect(self, session: RealtimeSession, **options: Unpack[ConnectOptions]) -> None:
        """Record the connection, with the prompt and the declared tools."""
        self.calls.append(
            MockCall(
                "connect",
                {
                    "session": session,
                    "system_prompt": options.get("system_prompt"),
                    "tools": list(options.get("tools", ())),
                },
            )
        )
        self.sessions[session.id] = session

    async def submit_tool_result(self, session: RealtimeSession, call_id: str, result: str) -> None:
        """Record the result in :attr:`tool_results`."""
        self.calls.append(
            MockCall(
                "submit_tool_result", {"session": session, "call_id": call_id, "result": result}
            )
        )
        self.tool_results.append((session.id, call_id, result))
        await self._notify()

    async def inject_context(
        self, session: RealtimeSession, text: str, *, silent: bool = True
    ) -> None:
        """Record the text in :attr:`injected`."""
        self.calls.append(
            MockCall("inject_context", {"session": session, "text": text, "silent": silent})
        )
        self.injected.append((session.id, text))
        await self._notify()

    async def disconnect(self, session: RealtimeSession) -> None:
        """Record the disconnection."""
        self.calls.append(MockCall("disconnect", {"session": session}))
        self.sessions.pop(session.id, None)

    # -- playing the model ---------------------------------------------------------------------

    async def simulate_tool_call(
        self, session: RealtimeSession, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        """The model calls ``name``; returns once the listeners have taken the call."""
        await self._fire_tool_call(session, call_id, name, arguments)

    async def simulate_tool_call_cancellation(
        self, session: RealtimeSession, call_ids: list[str]
    ) -> None:
        """The model gives up ``call_ids``; returns once the listeners have taken it."""
        await self._fire_tool_call_cancelled(session, list(call_ids))

    async def simulate_transcription(
        self, session: RealtimeSession, text: str, role: str = "assistant", final: bool = True
    ) -> None:
        """A transcript of the model's (``role="assistant"``) or the caller's speech."""
        await self._fire_transcription(session, text, role, final)

    async def simulate_error(
        self, session: RealtimeSession, code: str = "error", message: str = "Mock error"
    ) -> None:
        """The provider reports an error."""
        await self._fire_error(session, code, message)

    async def simulate_session_lost(
        self, session: RealtimeSession, reason: str = "Mock connection lost"
    ) -> None:
        """The connection to the model drops; returns once the listeners have taken it."""
        self.sessions.pop(session.id, None)
        await self._fire_session_lost(session, reason)

    # -- waiting for what the channel sends ----------------------------------------------------

    async def wait_for_tool_result(self, call_id: str) -> str:
        """Wait until a result for ``call_id`` is submitted; return it."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._result_of(call_id) is not None)
        result = self._result_of(call_id)
        assert result is not None
        return result

    async def wait_for_injection(self, contains: str = "") -> str:
        """Wait until an injected text containing ``contains`` arrives; return the first one."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._injection(contains) is not None)
        text = self._injection(contains)
        assert text is not None
        return text

    def _result_of(self, call_id: str) -> str | None:
        return next((result for _, cid, result in self.tool_results if cid == call_id), None)

    def _injection(self, contains: str) -> str | None:
        return next((text for _, text in self.injected if contains in text), None)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


class MockRealtimeTransport(RealtimeTransport):
    """A transport that records the sessions it carries and plays a caller hanging up.

    Attributes:
        calls: every method call, oldest first.
        connections: the connection of each accepted session still up, by session id.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[MockCall] = []
        self.connections: dict[str, Any] = {}

    async def accept(self, session: RealtimeSession, connection: Any) -> None:
        """Record the session and its connection."""
        self.calls.append(MockCall("accept", {"session": session, "connection": connection}))
        self.connections[session.id] = connection

    async def disconnect(self, session: RealtimeSession) -> None:
        """Record the hang-up."""
        self.calls.append(MockCall("disconnect", {"session": session}))
        self.connections.pop(session.id, None)

    async def simulate_client_disconnect(self, session: RealtimeSession) -> None:
        """The caller goes away; returns once the listeners have taken it."""
        self.connections.pop(session.id, None)
        await self._fire_client_disconnected(session)

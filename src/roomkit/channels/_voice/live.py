"""The channel's view of a live session, and the doors its calls come in by.

A :class:`LiveSession` holds what a realtime channel (the voice channel, the conference
channel) keeps while a session runs: the room, the tools declared to the model, and the task
serving each open call, so that ending the session, the model cancelling a call or the
provider losing the model's side can cut them. It opens the model's side of the session and
ends the session the same way for every channel; which back ends are hung up at the end is
the channel's to say.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from enum import StrEnum, unique

from roomkit.channels._calls.outcome import CallOutcome
from roomkit.models.room import Room
from roomkit.providers.ai.base import AITool
from roomkit.tools.texts import CUT, MODEL_LOST
from roomkit.voice.realtime.base import (
    RealtimeProvider,
    RealtimeSession,
    RealtimeSessionState,
    RealtimeTransport,
)

__all__ = ["Door", "LiveSession"]

logger = logging.getLogger("roomkit.channels.realtime_voice")


@unique
class Door(StrEnum):
    """How a call reached the channel, and so how its result goes back."""

    FUNCTION_CALL = "function_call"
    """The provider's function call: the result is submitted under the call's id."""
    RECOVERED = "recovered"
    """A call recovered from the model's speech: the result is injected as silent context."""
    REASONING = "reasoning"
    """A reasoning backend's call: the result is returned to the backend."""


@dataclass(eq=False)
class LiveSession:
    """A session the channel is running, and its open calls."""

    session: RealtimeSession
    """The session itself."""
    room: Room
    """The session's room."""
    tools: dict[str, AITool]
    """The tools declared to the session's model, by name."""
    calls: dict[str, asyncio.Task[CallOutcome]] = field(default_factory=dict)
    """The task serving each open call, by call id."""
    answered: set[str] = field(default_factory=set)
    """The open calls whose outcome is known, as it goes to the model: they run no more."""
    cut: dict[str, str] = field(default_factory=dict)
    """Why a call was cut, by call id, when the model cancelled it."""
    ending: str | None = None
    """Why the session's calls are cut, once the session is ending."""

    def __post_init__(self) -> None:
        self.session.on_lost(self._model_lost)

    @property
    def open(self) -> bool:
        """True while calls are taken and answered."""
        return self.ending is None and self.session.live

    @property
    def running(self) -> int:
        """How many calls run: open, their outcome not yet known."""
        return len(self.calls) - len(self.answered)

    def cut_hint(self, call_id: str) -> str:
        """What the model reads about why ``call_id`` has no result."""
        return self.cut.get(call_id) or self.ending or CUT

    def track(self, call_id: str, task: asyncio.Task[CallOutcome]) -> None:
        """Keep ``task`` as the one serving ``call_id`` until it finishes."""
        self.calls[call_id] = task

        def forget(done: asyncio.Task[CallOutcome]) -> None:
            if self.calls.get(call_id) is done:
                del self.calls[call_id]
                self.answered.discard(call_id)
            self.cut.pop(call_id, None)

        task.add_done_callback(forget)

    async def connect(self, provider: RealtimeProvider, system_prompt: str | None) -> None:
        """Open the model's side of the session on ``provider``, declaring the session's
        tools; the session turns active unless the model was lost while connecting.

        A session ended before or while it connects (the caller hung up) is not connected,
        or is disconnected from ``provider`` again: its ending could not reach a connection
        that was still being opened.
        """
        session = self.session
        if self.ending is not None:
            return
        await provider.connect(
            session,
            system_prompt=system_prompt,
            tools=[
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in self.tools.values()
            ],
        )
        if self.open:
            session.state = RealtimeSessionState.ACTIVE
        elif session.state in (RealtimeSessionState.ENDING, RealtimeSessionState.ENDED):
            await _disconnect(session, provider)

    async def finish(self, hint: str, *sides: RealtimeProvider | RealtimeTransport) -> None:
        """End the session: cut its open calls (their requests are withdrawn, nothing more is
        sent to the provider; the model reads ``hint``), then disconnect it from ``sides``."""
        session = self.session
        self.ending = hint
        session.state = RealtimeSessionState.ENDING
        await self.cut_calls(None, hint)
        for side in sides:
            await _disconnect(session, side)
        session.state = RealtimeSessionState.ENDED

    async def _model_lost(self, session: RealtimeSession, reason: str) -> None:
        """The provider lost the model's side: a result would have nowhere to go, so the open
        calls are cut (their requests withdrawn) and the session takes no new call. The
        session stays listed until it is ended."""
        logger.warning("Session %s lost its model: %s", session.id, reason)
        if self.ending is None:
            self.ending = MODEL_LOST
        await self.cut_calls(None, MODEL_LOST)

    async def cut_calls(self, call_ids: list[str] | None, hint: str) -> None:
        """Cancel the tasks of ``call_ids`` (all calls when ``None``) and wait for them.

        A call cutting its own session (a tool or a hook ending it) is left to finish: the
        session is no longer open, so its result goes nowhere.
        """
        me = asyncio.current_task()
        tasks = []
        for call_id in list(self.calls) if call_ids is None else call_ids:
            task = self.calls.get(call_id)
            if task is None or task is me or task.done():
                continue
            self.cut.setdefault(call_id, hint)
            task.cancel()
            tasks.append(task)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


async def _disconnect(session: RealtimeSession, side: RealtimeProvider | RealtimeTransport) -> None:
    try:
        await side.disconnect(session)
    except Exception:
        logger.exception("Could not disconnect session %s from %r", session.id, side)

"""What a tool knows about the call it serves: the room, the actor, the call itself.

The tool loop sets these context variables around every call; gathered calls copy them,
so a tool reads its own call's values. Outside a tool loop every accessor returns ``None``.
Tests and runtimes that drive tools themselves use :func:`tool_turn_context`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from roomkit.core.context_vars import bound

__all__ = [
    "ToolCallContext",
    "current_tool_actor_id",
    "current_tool_allowed_names",
    "current_tool_call",
    "current_tool_requester",
    "current_tool_room",
    "current_tool_room_id",
    "tool_turn_context",
]


@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """The call a tool is serving."""

    room_id: str = ""
    """The room of the turn."""
    tool_call_id: str = ""
    """The provider-assigned id of the call."""
    channel_id: str = ""
    """The channel serving the call."""
    structured_content: Any = None
    """Structured content the call carries, if any."""


@dataclass(frozen=True, slots=True)
class _Turn:
    room_id: str | None
    room: Any
    actor_id: str | None
    tools: frozenset[str] | None
    chain_depth: int
    requester: Any


_current_tool_call: ContextVar[ToolCallContext | None] = ContextVar(
    "roomkit_tool_call", default=None
)
_current_turn: ContextVar[_Turn | None] = ContextVar("roomkit_tool_turn", default=None)


def current_tool_call() -> ToolCallContext | None:
    """The call being served, or ``None`` outside a tool call."""
    return _current_tool_call.get()


@contextmanager
def _serving(call: ToolCallContext) -> Iterator[None]:
    """Make ``call`` the current call for the code inside, and restore the previous one after.

    The tool loop serves every call inside it, so that a call run in the turn's own task (a
    round of one call) leaves nothing behind for the next model round.
    """
    with bound(_current_tool_call, call):
        yield


def current_tool_room_id() -> str | None:
    """The room of the current turn (or call), or ``None`` outside a tool loop."""
    turn = _current_turn.get()
    if turn is not None and turn.room_id is not None:
        return turn.room_id
    call = _current_tool_call.get()
    return call.room_id if call is not None and call.room_id else None


def current_tool_room() -> Any:
    """The room object of the current turn, or ``None``."""
    turn = _current_turn.get()
    return turn.room if turn is not None else None


def current_tool_actor_id() -> str | None:
    """The participant whose message started the turn, or ``None`` for an authorless turn.

    It names the turn without authenticating it: check it against the room's roster before
    treating it as a principal.
    """
    turn = _current_turn.get()
    return turn.actor_id if turn is not None else None


def current_tool_requester() -> Any:
    """Whatever the runtime recorded as the turn's requester, or ``None``."""
    turn = _current_turn.get()
    return turn.requester if turn is not None else None


def current_tool_allowed_names() -> frozenset[str] | None:
    """The names of the tools offered to the current turn, or ``None`` when unknown."""
    turn = _current_turn.get()
    return turn.tools if turn is not None else None


def _room_id_of(room: Any) -> str | None:
    value = getattr(room, "id", None)
    if value is None:
        value = getattr(room, "room_id", None)
    return value if isinstance(value, str) else None


@contextmanager
def tool_turn_context(
    *,
    room_id: str | None = None,
    room: Any = None,
    actor_id: str | None = None,
    tools: Sequence[Any] | None = None,
    chain_depth: int = 0,
    call: ToolCallContext | None = None,
    requester: Any = None,
) -> Iterator[None]:
    """Set the current turn (and optionally the current call) for the code inside.

    The tool loop does this for every call; use it to drive tools yourself, e.g. in tests::

        with tool_turn_context(room_id="r1", actor_id="alice", call=ToolCallContext("r1", "tc1")):
            await human("AskUserQuestion", {"question": "Color?"})

    Raises:
        ValueError: ``room``, ``room_id`` and ``call`` name different rooms.
    """
    named = {
        value
        for value in (
            room_id,
            _room_id_of(room) if room is not None else None,
            call and call.room_id,
        )
        if value
    }
    if len(named) > 1:
        raise ValueError(f"tool_turn_context was given different rooms: {sorted(named)}")
    names = None if tools is None else frozenset(getattr(t, "name", t) for t in tools)
    turn = _Turn(
        room_id=next(iter(named)) if named else None,
        room=room,
        actor_id=actor_id,
        tools=names,
        chain_depth=chain_depth,
        requester=requester,
    )
    turn_token = _current_turn.set(turn)
    call_token = _current_tool_call.set(call) if call is not None else None
    try:
        yield
    finally:
        if call_token is not None:
            _current_tool_call.reset(call_token)
        _current_turn.reset(turn_token)

"""What an AG-UI client is shown: the room's replies, a request's outcome and a held call, as
AG-UI events.

A reply of the agent is a ``TEXT_MESSAGE_START/CONTENT/END`` triple under the message id the
room recorded (the client's own id for a message it sent); a request settled elsewhere is a
``TOOL_CALL_RESULT`` saying how it ended; a held call is ``TOOL_CALL_START/ARGS/END`` before
the interrupt that names its request. Every event goes out through :func:`sendable`, so text
UTF-8 cannot encode (a lone surrogate a model wrote) is escaped instead of breaking the stream.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import (
    BaseEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from roomkit._storable import unencodable_text
from roomkit.core.failed_turns import ends_failed_turn
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.room import RoomEvent

__all__ = [
    "held_call",
    "lacking",
    "message_id_of",
    "outcome_of",
    "result_of",
    "sendable",
    "text_events",
    "unseen",
]


def message_id_of(event: RoomEvent) -> str:
    """The id the client knows ``event`` by: its own message id, else the event's."""
    message_id = event.metadata.get("message_id")
    return message_id if isinstance(message_id, str) else str(event.id)


def outcome_of(request: PendingInput) -> str:
    """How the settled ``request`` ended, as the client reads it."""
    by = f" by {request.settled_by}" if request.settled_by else ""
    if request.status is PendingInputStatus.RESOLVED:
        return f"answered{by}: {request.result}"
    if request.status is PendingInputStatus.TIMED_OUT:
        return "timed out"
    if request.withdrawn:
        return "withdrawn"
    reason = f": {request.reject_reason}" if request.reject_reason else ""
    return f"rejected{by}{reason}"


def result_of(request: PendingInput) -> ToolCallResultEvent:
    """The ``TOOL_CALL_RESULT`` of a request settled elsewhere."""
    return ToolCallResultEvent(
        message_id=f"{request.pending_id}-outcome",
        tool_call_id=request.tool_call_id or request.pending_id,
        content=outcome_of(request),
        role="tool",
    )


def unseen(history: list[RoomEvent], messages: list[Any], own: tuple[str, str]) -> list[RoomEvent]:
    """The agent's replies after the last message the client holds, that it lacks (an
    event that ended a failed turn is no reply: the run that followed the turn told it)."""
    return [event for event in lacking(history, messages, own) if not ends_failed_turn(event)]


def lacking(history: list[RoomEvent], messages: list[Any], own: tuple[str, str]) -> list[RoomEvent]:
    """The events of others after the last message the client holds, that it lacks: the
    agent's replies, and the ends of failed turns.

    A user message of the client's is matched with the room's record of it (its own id, on
    the door's channel, from the caller: ``own``), every other message with an event by the
    id the run streamed it under: a client numbering its messages (``"2"``) holds no reply
    the room numbered the same, nor the message another person's client numbered the same.
    """
    channel_id = own[0]
    sent = {message.id for message in messages if message.role == "user"}
    others = {message.id for message in messages if message.role != "user"}

    def held(event: RoomEvent) -> bool:
        if event.channel_id == channel_id:
            return event.sender_id == own[1] and message_id_of(event) in sent
        return message_id_of(event) in others

    last = -1
    for index, event in enumerate(history):
        if held(event):
            last = index
    if last < 0:
        return []
    return [
        event for event in history[last + 1 :] if event.channel_id != channel_id and not held(event)
    ]


def text_events(event: RoomEvent) -> list[BaseEvent]:
    """A reply of the agent as a ``TEXT_MESSAGE_START/CONTENT/END`` triple (none when empty)."""
    body = event.content.body
    if not body:
        return []
    message_id = message_id_of(event)
    return [
        TextMessageStartEvent(message_id=message_id, role="assistant"),
        TextMessageContentEvent(message_id=message_id, delta=body),
        TextMessageEndEvent(message_id=message_id),
    ]


def held_call(request: PendingInput) -> list[BaseEvent]:
    """The held call of ``request`` as ``TOOL_CALL_START/ARGS/END``."""
    call_id = request.tool_call_id or request.pending_id
    return [
        ToolCallStartEvent(tool_call_id=call_id, tool_call_name=request.tool_name),
        ToolCallArgsEvent(
            tool_call_id=call_id, delta=json.dumps(request.arguments, ensure_ascii=False)
        ),
        ToolCallEndEvent(tool_call_id=call_id),
    ]


def sendable(event: BaseEvent) -> BaseEvent:
    """``event`` as the stream can carry it: text UTF-8 cannot encode (a lone surrogate in a
    model's reply, which JSON's ``"\\ud800"`` makes) escaped as ``\\ud800``; the event
    itself when it holds none, as nearly all do."""
    fields = event.model_dump(by_alias=True, exclude_none=True)
    if unencodable_text(fields) is None:
        return event
    return type(event).model_validate(_escaped(fields))


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped(item) for item in value]
    return value

"""The report of one tool call, as BEFORE_TOOL_USE and ON_TOOL_CALL hooks receive it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum, unique
from typing import Any

from roomkit.models.clock import utcnow
from roomkit.models.enums import ChannelType

__all__ = ["ToolCallEvent", "ToolCallOutcome"]


@unique
class ToolCallOutcome(StrEnum):
    """How a reported call ended. A ``StrEnum``: each member equals its plain string."""

    SERVED = "served"
    """The call ran and its result went to the model."""
    FAILED = "failed"
    """The call ran and failed (an error, a timeout)."""
    REFUSED = "refused"
    """The call was refused: by the channel, a hook, a person or a handler."""
    CANCELLED = "cancelled"
    """The call was cut before its result (the turn ended, the channel closed)."""


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """One tool call, before it is served (``result`` is ``None``) or once it is settled.

    BEFORE_TOOL_USE hooks receive it to allow, block or rewrite the call; ON_TOOL_CALL hooks
    and observers receive it once per call, with the outcome.
    """

    channel_id: str
    """The channel that served (or refused) the call."""
    channel_type: ChannelType
    """The door the call came through."""
    tool_call_id: str
    """The provider-assigned call id."""
    name: str
    """The tool the model called."""
    arguments: dict[str, Any]
    """The arguments the call was served with (after any rewrite)."""
    result: str | list[Any] | None
    """What the model reads; ``None`` before the call is served."""
    room_id: str
    """The room of the turn ("" when unknown)."""
    session: Any = None
    """The voice or conference session of the call, when there is one."""
    timestamp: datetime = field(default_factory=utcnow)
    """When the event was made (UTC)."""
    is_error: bool = False
    """True when the model reads an error: a refusal, a failure or a cancellation."""
    cancelled: bool = False
    """True when the call was cut before its result."""
    structured_content: Any = None
    """A machine-readable form of the result, when the tool gives one."""
    error_detail: str | None = None
    """What failed, for the host's eyes (``"<Class>: <message>"``); the model never reads it."""
    refused: bool = False
    """True when the call was refused rather than run."""
    refused_but_ran: bool = False
    """True when the call was reported refused although its tool had already run."""
    actor_id: str | None = None
    """The participant whose turn made the call, or ``None`` for an authorless turn."""

    @property
    def outcome(self) -> ToolCallOutcome:
        """How the call ended: ``"served"``, ``"failed"``, ``"refused"`` or ``"cancelled"``.

        A cancellation wins over everything else, then a refusal; any other error is a
        failure. Before the call is served (BEFORE_TOOL_USE) this reads ``"served"``.
        """
        if self.cancelled:
            return ToolCallOutcome.CANCELLED
        if self.refused:
            return ToolCallOutcome.REFUSED
        if self.is_error:
            return ToolCallOutcome.FAILED
        return ToolCallOutcome.SERVED

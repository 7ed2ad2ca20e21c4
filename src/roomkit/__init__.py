"""roomkit: human-in-the-loop tools for AI agents.

An agent's tool call pauses, a person is asked, and the agent resumes with the answer, the
refusal or the timeout.

Every name loads on first use, with only the modules it lives in: ``import roomkit`` (and
so every ``roomkit`` command) loads none of the kit until a name is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roomkit._lazy import lazy_exports

if TYPE_CHECKING:
    from roomkit.channels.ai import AIChannel
    from roomkit.channels.conference import ConferenceChannel, ConferenceRealtimeConfig
    from roomkit.channels.realtime_voice import RealtimeVoiceChannel
    from roomkit.channels.websocket import WebSocketChannel
    from roomkit.conference.mock import MockConferenceBackend
    from roomkit.core.exceptions import (
        ArgumentsChangedError,
        AsyncSettleRequiredError,
        ChannelClosedError,
        ChannelNotRegisteredError,
        ChannelRefusalError,
        ChannelStateError,
        HandlerClosedError,
        HumanInputError,
        HumanInputRejectedError,
        HumanInputTimeoutError,
        InvalidAnswerError,
        InvalidTextError,
        KeyConflictError,
        RequestWithdrawnError,
        RoomKitError,
        SessionNotOpenError,
        StoreError,
        StoreUnavailableError,
        ToolFailedError,
        ToolRefusedError,
        ToolTimeoutError,
        UnknownRequestError,
        UnservedToolCallError,
        VoteNeedsActorError,
    )
    from roomkit.core.framework import RoomKit
    from roomkit.models.enums import ChannelType
    from roomkit.models.hooks import HookExecution, HookResult, HookTrigger, RoomContext
    from roomkit.models.pending_input import PendingInput, PendingInputEvent, PendingInputStatus
    from roomkit.models.room import (
        ChannelBinding,
        InboundMessage,
        InboundResult,
        RoomEvent,
        TextContent,
    )
    from roomkit.models.tool_call import ToolCallEvent
    from roomkit.providers.ai.base import AITool
    from roomkit.tools.approvals import Approval, Quorum
    from roomkit.tools.external import ToolDecision
    from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
    from roomkit.tools.policy import ToolPolicy

__all__ = [
    "AIChannel",
    "AITool",
    "Approval",
    "ArgumentsChangedError",
    "AsyncSettleRequiredError",
    "ChannelBinding",
    "ChannelClosedError",
    "ChannelNotRegisteredError",
    "ChannelRefusalError",
    "ChannelStateError",
    "ChannelType",
    "ConferenceChannel",
    "ConferenceRealtimeConfig",
    "HandlerClosedError",
    "HookExecution",
    "HookResult",
    "HookTrigger",
    "HumanInputError",
    "HumanInputHandler",
    "HumanInputRejectedError",
    "HumanInputTimeoutError",
    "HumanInputToolHandler",
    "InboundMessage",
    "InboundResult",
    "InvalidAnswerError",
    "InvalidTextError",
    "KeyConflictError",
    "MockConferenceBackend",
    "PendingInput",
    "PendingInputEvent",
    "PendingInputStatus",
    "Quorum",
    "RealtimeVoiceChannel",
    "RequestWithdrawnError",
    "RoomContext",
    "RoomEvent",
    "RoomKit",
    "RoomKitError",
    "SessionNotOpenError",
    "StoreError",
    "StoreUnavailableError",
    "TextContent",
    "ToolCallEvent",
    "ToolDecision",
    "ToolFailedError",
    "ToolPolicy",
    "ToolRefusedError",
    "ToolTimeoutError",
    "UnknownRequestError",
    "UnservedToolCallError",
    "VoteNeedsActorError",
    "WebSocketChannel",
]

# Each name with the module it lives in, relative to the package.
_HOMES = {
    "AIChannel": "channels.ai",
    "ConferenceChannel": "channels.conference",
    "ConferenceRealtimeConfig": "channels.conference",
    "RealtimeVoiceChannel": "channels.realtime_voice",
    "WebSocketChannel": "channels.websocket",
    "MockConferenceBackend": "conference.mock",
    "ArgumentsChangedError": "core.exceptions",
    "AsyncSettleRequiredError": "core.exceptions",
    "ChannelClosedError": "core.exceptions",
    "ChannelNotRegisteredError": "core.exceptions",
    "ChannelRefusalError": "core.exceptions",
    "ChannelStateError": "core.exceptions",
    "HandlerClosedError": "core.exceptions",
    "HumanInputError": "core.exceptions",
    "HumanInputRejectedError": "core.exceptions",
    "HumanInputTimeoutError": "core.exceptions",
    "InvalidAnswerError": "core.exceptions",
    "InvalidTextError": "core.exceptions",
    "KeyConflictError": "core.exceptions",
    "RequestWithdrawnError": "core.exceptions",
    "RoomKitError": "core.exceptions",
    "SessionNotOpenError": "core.exceptions",
    "StoreError": "core.exceptions",
    "StoreUnavailableError": "core.exceptions",
    "ToolFailedError": "core.exceptions",
    "ToolRefusedError": "core.exceptions",
    "ToolTimeoutError": "core.exceptions",
    "UnknownRequestError": "core.exceptions",
    "UnservedToolCallError": "core.exceptions",
    "VoteNeedsActorError": "core.exceptions",
    "RoomKit": "core.framework",
    "ChannelType": "models.enums",
    "HookExecution": "models.hooks",
    "HookResult": "models.hooks",
    "HookTrigger": "models.hooks",
    "RoomContext": "models.hooks",
    "PendingInput": "models.pending_input",
    "PendingInputEvent": "models.pending_input",
    "PendingInputStatus": "models.pending_input",
    "ChannelBinding": "models.room",
    "InboundMessage": "models.room",
    "InboundResult": "models.room",
    "RoomEvent": "models.room",
    "TextContent": "models.room",
    "ToolCallEvent": "models.tool_call",
    "AITool": "providers.ai.base",
    "Approval": "tools.approvals",
    "Quorum": "tools.approvals",
    "ToolDecision": "tools.external",
    "HumanInputHandler": "tools.human_input",
    "HumanInputToolHandler": "tools.human_input",
    "ToolPolicy": "tools.policy",
}

_SUBPACKAGES = frozenset(
    {
        "auth",
        "channels",
        "conference",
        "core",
        "models",
        "people",
        "policy",
        "providers",
        "routing",
        "stores",
        "tools",
        "version",
        "voice",
    }
)
"""Subpackages reachable as attributes after a bare ``import roomkit``
(``roomkit.tools.human_input``), each loaded on that first use."""

_export = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        # The import statement binds the subpackage on this package as it loads it.
        __import__(f"{__name__}.{name}")
        return globals()[name]
    return _export(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})

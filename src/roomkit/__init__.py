"""roomkit: human-in-the-loop tools for AI agents.

An agent's tool call pauses, a person is asked, and the agent resumes with the answer, the
refusal or the timeout.
"""

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

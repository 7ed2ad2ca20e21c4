"""roomkit: human-in-the-loop tools for AI agents.

An agent's tool call pauses, a person is asked, and the agent resumes with the answer, the
refusal or the timeout.
"""

from roomkit.core.exceptions import (
    ChannelRefusalError,
    HandlerClosedError,
    HumanInputError,
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    RoomKitError,
    ToolFailedError,
    ToolRefusedError,
    ToolTimeoutError,
    UnknownRequestError,
    UnservedToolCallError,
)
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputEvent, PendingInputStatus
from roomkit.providers.ai.base import AITool
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler

__all__ = [
    "AITool",
    "ChannelRefusalError",
    "ChannelType",
    "HandlerClosedError",
    "HumanInputError",
    "HumanInputHandler",
    "HumanInputRejectedError",
    "HumanInputTimeoutError",
    "HumanInputToolHandler",
    "PendingInput",
    "PendingInputEvent",
    "PendingInputStatus",
    "RequestWithdrawnError",
    "RoomKitError",
    "ToolFailedError",
    "ToolRefusedError",
    "ToolTimeoutError",
    "UnknownRequestError",
    "UnservedToolCallError",
]

"""Tools: the call context, handler composition, and human input."""

from roomkit.tools.compose import ToolHandler, compose_tool_handlers
from roomkit.tools.context import (
    ToolCallContext,
    current_tool_actor_id,
    current_tool_allowed_names,
    current_tool_call,
    current_tool_requester,
    current_tool_room,
    current_tool_room_id,
    tool_turn_context,
)
from roomkit.tools.external import (
    BeforeToolDecision,
    ExternalToolHandler,
    PolicyExternalToolHandler,
    ToolDecision,
)
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler
from roomkit.tools.policy import ToolPolicy

__all__ = [
    "BeforeToolDecision",
    "ExternalToolHandler",
    "HumanInputHandler",
    "HumanInputToolHandler",
    "PolicyExternalToolHandler",
    "ToolCallContext",
    "ToolDecision",
    "ToolHandler",
    "ToolPolicy",
    "compose_tool_handlers",
    "current_tool_actor_id",
    "current_tool_allowed_names",
    "current_tool_call",
    "current_tool_requester",
    "current_tool_room",
    "current_tool_room_id",
    "tool_turn_context",
]

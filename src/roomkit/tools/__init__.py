"""Tools: the call context, handler composition, and human input."""

from roomkit.tools import context
from roomkit.tools.compose import ToolHandler, compose_tool_handlers
from roomkit.tools.context import *  # noqa: F403 - the call context's accessors, all of them
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
    "ToolDecision",
    "ToolHandler",
    "ToolPolicy",
    "compose_tool_handlers",
]
__all__ += context.__all__

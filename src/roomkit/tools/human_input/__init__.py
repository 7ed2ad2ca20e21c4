"""Human input for tools: the async primitive and the tool handler that serves it."""

from roomkit.stores.base import PendingStore
from roomkit.stores.memory import MemoryStore
from roomkit.tools.human_input._announce import unannounced
from roomkit.tools.human_input._at_once import decided_at_once
from roomkit.tools.human_input._decided import create_decided
from roomkit.tools.human_input._decisions import created_with
from roomkit.tools.human_input._keys import made_for
from roomkit.tools.human_input._later import record_run
from roomkit.tools.human_input._offered import granted_by_quorum, granted_with
from roomkit.tools.human_input.definitions import (
    ASK_USER_QUESTION,
    CONFIRM_ACTION,
    HUMAN_INPUT_TOOLS,
)
from roomkit.tools.human_input.handler import HumanInputHandler, OnInputRequiredCallback
from roomkit.tools.human_input.statistics import HandlerStatistics
from roomkit.tools.human_input.tool_handler import HumanInputToolHandler

__all__ = [
    "ASK_USER_QUESTION",
    "CONFIRM_ACTION",
    "HUMAN_INPUT_TOOLS",
    "HandlerStatistics",
    "HumanInputHandler",
    "HumanInputToolHandler",
    "MemoryStore",
    "OnInputRequiredCallback",
    "PendingStore",
    "create_decided",
    "created_with",
    "decided_at_once",
    "granted_by_quorum",
    "granted_with",
    "made_for",
    "record_run",
    "unannounced",
]

"""AI model providers: the interface, a scripted mock, and vendor SDK adapters."""

from roomkit.providers.ai.base import (
    AIContentPart,
    AIContext,
    AIMessage,
    AIProvider,
    AIResponse,
    AITextPart,
    AITool,
    AIToolCall,
    AIToolCallPart,
    AIToolResultPart,
    AIUsage,
    ServedCall,
)
from roomkit.providers.ai.mock import MockAIProvider

__all__ = [
    "AIContentPart",
    "AIContext",
    "AIMessage",
    "AIProvider",
    "AIResponse",
    "AITextPart",
    "AITool",
    "AIToolCall",
    "AIToolCallPart",
    "AIToolResultPart",
    "AIUsage",
    "MockAIProvider",
    "ServedCall",
]

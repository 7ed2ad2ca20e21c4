"""A model whose turns fail on cue, for the protocol doors' tests of a failed turn."""

from __future__ import annotations

from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse
from roomkit.providers.ai.mock import MockAIProvider


class Fragile(AIProvider):
    """A model that fails on "Break" and on every answer to its question, asks on "Ask",
    and echoes anything else."""

    @property
    def model_name(self) -> str:
        return "fragile"

    async def generate(self, context: AIContext) -> AIResponse:
        last = context.messages[-1]
        if last.tool_result_parts or last.text == "Break":
            raise RuntimeError("model down")
        if last.text == "Ask":
            return MockAIProvider.tool_call("AskUserQuestion", {"question": "Which?"}, id="tc-1")
        return AIResponse(content=f"Echo: {last.text}")

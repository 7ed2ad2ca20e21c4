"""A model whose every call fails, for the tests of a turn that fails."""

from __future__ import annotations

from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse


class Down(AIProvider):
    """A model that raises on every call, counting them."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def model_name(self) -> str:
        return "down"

    async def generate(self, context: AIContext) -> AIResponse:
        self.calls += 1
        raise RuntimeError("model down")

"""The current tool call: set while a call is served, gone once it ends."""

from __future__ import annotations

from typing import Any

from ai_harness import LOOKUP, Build, ask, round_of, tool_call

from roomkit.providers.ai.base import AIContext, AIResponse
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools import ToolCallContext, current_tool_call


class Watching(MockAIProvider):
    """The scripted model, noting the current tool call whenever it is asked for a round."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.seen: list[ToolCallContext | None] = []

    async def generate(self, context: AIContext) -> AIResponse:
        self.seen.append(current_tool_call())
        return await super().generate(context)


async def test_the_next_round_sees_no_call_after_a_round_of_one(build: Build) -> None:
    h = await build(round_of(tool_call("lookup", id="tc-1")), tools=[LOOKUP])
    model = Watching(ai_responses=h.provider.ai_responses)
    h.ai.provider = model
    inside: list[ToolCallContext | None] = []

    async def lookup(name: str, arguments: dict[str, Any]) -> str:
        inside.append(current_tool_call())
        return "found"

    h.ai.tool_handler = lookup

    await h.say()

    assert inside == [ToolCallContext("r1", "tc-1", "agent")]
    assert model.seen == [None, None]


async def test_the_next_round_sees_no_call_after_a_person_answered(build: Build) -> None:
    h = await build(round_of(ask(id="tc-1")))
    model = Watching(ai_responses=h.provider.ai_responses)
    h.ai.provider = model
    h.answer_from_hook("blue")

    await h.say()

    assert model.seen == [None, None]

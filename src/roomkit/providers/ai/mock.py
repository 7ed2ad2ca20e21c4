"""MockAIProvider: a scripted model for tests and examples.

It replays a fixed list of responses and records every context it is given, so a test can
script a tool call, drive a turn, and then check what the model was shown on each round.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar

from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse, AIToolCall

__all__ = ["MockAIProvider"]


class MockAIProvider(AIProvider):
    """A provider that answers from a script, round-robin, and records what it was asked.

    ``generate`` serves ``ai_responses`` in order and starts over at the end; without them it
    serves ``responses`` as plain text the same way; with neither it answers
    ``"Mock response"``. Each served response is a fresh copy, so a caller that edits one
    does not change the script.

    Example::

        provider = MockAIProvider(
            ai_responses=[
                MockAIProvider.tool_call("AskUserQuestion", {"question": "Colour?"}),
                AIResponse(content="Blue it is."),
            ]
        )

    Args:
        responses: text answers, used when ``ai_responses`` is empty.
        ai_responses: full responses (text, tool calls), served first.
        streaming: what :attr:`supports_streaming` reports; the mock always answers through
            ``generate()``.

    Attributes:
        calls: every :class:`AIContext` received, oldest first. The message lists are deep
            copies taken on arrival, so a caller that keeps appending to its conversation
            does not rewrite what an earlier round was shown.
        closed: True once :meth:`close` has run.
    """

    _tool_call_ids: ClassVar[itertools.count[int]] = itertools.count(1)

    def __init__(
        self,
        responses: list[str] | None = None,
        *,
        ai_responses: list[AIResponse] | None = None,
        streaming: bool = False,
    ) -> None:
        self.responses: list[str] = list(responses or [])
        self.ai_responses: list[AIResponse] = list(ai_responses or [])
        self.streaming = streaming
        self.calls: list[AIContext] = []
        self.closed = False
        self._served = 0

    @property
    def model_name(self) -> str:
        """Always ``"mock"``."""
        return "mock"

    @property
    def supports_streaming(self) -> bool:
        """The ``streaming`` flag given at construction."""
        return self.streaming

    async def generate(self, context: AIContext) -> AIResponse:
        """Record the context and serve the next scripted response.

        Args:
            context: the context the channel built for this round.

        Returns:
            A copy of the next scripted response.
        """
        self.calls.append(_snapshot(context))
        turn = self._served
        self._served += 1
        if self.ai_responses:
            scripted = self.ai_responses[turn % len(self.ai_responses)]
            return scripted.model_copy(deep=True)
        if self.responses:
            return AIResponse(content=self.responses[turn % len(self.responses)])
        return AIResponse(content="Mock response")

    async def close(self) -> None:
        """Mark the provider closed."""
        self.closed = True

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        content: str = "",
    ) -> AIResponse:
        """A response holding one tool call, for scripting ``ai_responses``.

        Args:
            name: the tool to call.
            arguments: the call's arguments; none when ``None``.
            id: the call id; ``"tc-1"``, ``"tc-2"``... in creation order when ``None`` (the
                counter is shared by every call of this method in the process, so pass an
                id when a test needs to know it).
            content: text the model writes alongside the call.

        Returns:
            An :class:`AIResponse` with ``finish_reason="tool_use"`` and the one call.
        """
        call_id = id if id is not None else f"tc-{next(cls._tool_call_ids)}"
        call = AIToolCall(id=call_id, name=name, arguments=dict(arguments or {}))
        return AIResponse(content=content, finish_reason="tool_use", tool_calls=[call])


def _snapshot(context: AIContext) -> AIContext:
    # Only the containers a caller keeps mutating are copied: the room may be an object
    # that cannot be deep-copied, and AITool is frozen.
    return context.model_copy(
        update={
            "messages": [message.model_copy(deep=True) for message in context.messages],
            "tools": list(context.tools),
            "metadata": dict(context.metadata),
        }
    )

"""What the vendor provider tests share: the tools offered, the contexts, building providers."""

from __future__ import annotations

import importlib
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest

from roomkit.providers.ai.base import (
    AIContext,
    AIMessage,
    AIProvider,
    AITool,
    AIToolCall,
    AIToolResultPart,
)

P = TypeVar("P", bound=AIProvider)

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question and wait for the answer.",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
)
LOOKUP = AITool(
    name="lookup", parameters={"type": "object", "properties": {"q": {"type": "string"}}}
)


def ask_context() -> AIContext:
    """A user asks for a logo; the model may ask a question back."""
    return AIContext(messages=[AIMessage.user("Make me a logo", name="alice")], tools=[ASK])


def orphan_result_context(call_id: str) -> AIContext:
    """A tool result follows a turn that made no call: the vendors refuse it."""
    orphan = AIToolResultPart(tool_call_id=call_id, name="AskUserQuestion", content="blue")
    return AIContext(
        messages=[
            AIMessage.user("Hi"),
            AIMessage.assistant("Hello."),
            AIMessage.tool_results([orphan]),
        ]
    )


def unanswered_call_context(call_id: str) -> AIContext:
    """A tool call the next turn leaves unanswered: the vendors refuse it."""
    asked = AIToolCall(id=call_id, name="AskUserQuestion", arguments={"question": "Colour?"})
    return AIContext(
        messages=[
            AIMessage.user("Hi"),
            AIMessage.assistant("", [asked]),
            AIMessage.user("Never mind."),
        ]
    )


@asynccontextmanager
async def providers(build: Callable[..., P], **defaults: Any) -> AsyncIterator[Callable[..., P]]:
    """A maker of providers with ``defaults`` (keywords override them); all closed at exit."""
    made: list[P] = []

    def make(**settings: Any) -> P:
        provider = build(**{**defaults, **settings})
        made.append(provider)
        return provider

    try:
        yield make
    finally:
        for provider in made:
            await provider.close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def import_without_sdk(monkeypatch: pytest.MonkeyPatch, sdk: str, module: str) -> None:
    """Import ``module`` afresh while the ``sdk`` package cannot be imported."""
    monkeypatch.setitem(sys.modules, sdk, None)
    monkeypatch.delitem(sys.modules, module)
    importlib.import_module(module)

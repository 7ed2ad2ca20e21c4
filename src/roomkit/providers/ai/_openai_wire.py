"""Translation between roomkit's provider types and the Chat Completions API.

Outbound: an :class:`AIContext` becomes ``messages`` (system prompt first, a ``tool`` message
per result) and function ``tools``. Inbound: a ``ChatCompletion``, or the chunks of a streamed
one, become an :class:`AIResponse`. The API has no error flag on a tool result, so an error
result's content is marked with :data:`ERROR_MARK`. A call whose arguments do not parse as a
JSON object, or that was cut by the token limit, comes back ``partial`` so the channel
refuses it. A response that cannot be read raises :class:`ProviderResponseError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from openai.types.completion_usage import CompletionUsage

from roomkit.core.exceptions import ProviderResponseError
from roomkit.providers.ai._tool_calls import tool_call
from roomkit.providers.ai.base import (
    AIContext,
    AIMessage,
    AIResponse,
    AITool,
    AIToolCall,
    AIUsage,
)

__all__ = ["ERROR_MARK", "StreamAssembly", "read_completion", "to_messages", "to_tools"]

PROVIDER = "openai"

ERROR_MARK = "Error: "
"""Put in front of an error result's content: the model reads that the call did not succeed."""

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def speaker_name(participant_id: str) -> str | None:
    """A participant id as the API's ``name`` (letters, digits, ``_``, ``-``; 64 at most)."""
    name = _NAME_UNSAFE.sub("_", participant_id)[:64]
    return name or None


def to_messages(context: AIContext) -> list[ChatCompletionMessageParam]:
    """The conversation as Chat Completions messages, the system prompt first."""
    out: list[ChatCompletionMessageParam] = []
    if context.system_prompt:
        out.append({"role": "system", "content": context.system_prompt})
    for message in context.messages:
        out.extend(_messages(message))
    return out


def _messages(message: AIMessage) -> list[ChatCompletionMessageParam]:
    if message.role == "system":
        return [{"role": "system", "content": message.text}] if message.text else []
    if message.role == "user":
        if not message.text:
            return []
        name = speaker_name(message.name) if message.name else None
        if name is None:
            return [{"role": "user", "content": message.text}]
        return [{"role": "user", "content": message.text, "name": name}]
    if message.role == "assistant":
        calls: list[ChatCompletionMessageFunctionToolCallParam] = [
            {
                "id": part.id,
                "type": "function",
                "function": {"name": part.name, "arguments": json.dumps(part.arguments)},
            }
            for part in message.tool_call_parts
        ]
        if not calls:
            return [{"role": "assistant", "content": message.text}] if message.text else []
        return [{"role": "assistant", "content": message.text or None, "tool_calls": calls}]
    return [
        {
            "role": "tool",
            "tool_call_id": part.tool_call_id,
            "content": ERROR_MARK + part.content if part.is_error else part.content,
        }
        for part in message.tool_result_parts
    ]


def to_tools(tools: list[AITool]) -> list[ChatCompletionFunctionToolParam]:
    """The tools offered, as functions with their JSON Schema parameters."""
    out: list[ChatCompletionFunctionToolParam] = []
    for tool in tools:
        param: ChatCompletionFunctionToolParam = {
            "type": "function",
            "function": {"name": tool.name, "parameters": tool.parameters},
        }
        if tool.description:
            param["function"]["description"] = tool.description
        out.append(param)
    return out


def read_completion(completion: object) -> AIResponse:
    """The :class:`AIResponse` for a non-streamed ``ChatCompletion`` (its first choice).

    Raises:
        ProviderResponseError: the body is not a completion, has no choice, or lacks fields.
    """
    if not isinstance(completion, ChatCompletion):
        raise ProviderResponseError(
            f"Expected a chat completion, got {type(completion).__name__}", provider=PROVIDER
        )
    try:
        if not completion.choices:
            raise ProviderResponseError("The completion holds no choice", provider=PROVIDER)
        choice = completion.choices[0]
        message = choice.message
        calls = [
            _call(call.id, call.function.name, call.function.arguments, position)
            for position, call in enumerate(message.tool_calls or [])
            if isinstance(call, ChatCompletionMessageFunctionToolCall)
        ]
        if choice.finish_reason == "length" and calls:
            calls[-1].partial = True
        metadata: dict[str, Any] = {"id": completion.id, "model": completion.model}
        if message.refusal:
            metadata["refusal"] = message.refusal
        return AIResponse(
            # A refusal is what the model says instead of an answer: the room should read it.
            content=message.content or message.refusal or "",
            finish_reason=choice.finish_reason,
            usage=_usage(completion.usage),
            metadata=metadata,
            tool_calls=calls,
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise ProviderResponseError(f"Malformed completion: {exc}", provider=PROVIDER) from exc


def _call(call_id: str | None, name: str, raw: str | None, position: int) -> AIToolCall:
    # Some compatible servers leave the id out; the result still needs one to refer to.
    return tool_call(call_id or f"call_{position}", name, raw or "")


def _usage(usage: CompletionUsage | None) -> AIUsage | None:
    if usage is None:
        return None
    return AIUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)


@dataclass
class _CallFragments:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembly:
    """Builds one :class:`AIResponse` from a streamed completion's chunks (first choice).

    :meth:`feed` returns each text delta so a caller can pass text on as it arrives. A call's
    id and name come in its first delta, its arguments in fragments across many chunks, all
    under the call's ``index``.
    """

    text: list[str] = field(default_factory=list)
    calls: dict[int, _CallFragments] = field(default_factory=dict)
    completion_id: str = ""
    model: str = ""
    finish_reason: str | None = None
    usage: AIUsage | None = None

    def feed(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; returns the text it adds (``""`` for none).

        Raises:
            ProviderResponseError: the chunk does not have the fields a chunk must.
        """
        try:
            return self._feed(chunk)
        except (AttributeError, TypeError, ValueError) as exc:
            message = f"Malformed stream chunk: {exc}"
            raise ProviderResponseError(message, provider=PROVIDER) from exc

    def _feed(self, chunk: ChatCompletionChunk) -> str:
        self.completion_id = self.completion_id or chunk.id
        self.model = self.model or chunk.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        added = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta.content:
                self.text.append(delta.content)
                added += delta.content
            for piece in delta.tool_calls or []:
                call = self.calls.setdefault(piece.index, _CallFragments())
                call.id = call.id or piece.id or ""
                if piece.function is not None:
                    call.name = call.name or piece.function.name or ""
                    if piece.function.arguments:
                        call.arguments.append(piece.function.arguments)
        return added

    def response(self) -> AIResponse:
        """The assembled response.

        Raises:
            ProviderResponseError: the stream ended without a finish reason.
        """
        if self.finish_reason is None:
            raise ProviderResponseError(
                "The stream ended before the completion was finished", provider=PROVIDER
            )
        calls = [
            _call(fragments.id, fragments.name, "".join(fragments.arguments), position)
            for position, (_, fragments) in enumerate(sorted(self.calls.items()))
        ]
        if self.finish_reason == "length" and calls:
            calls[-1].partial = True
        return AIResponse(
            content="".join(self.text),
            finish_reason=self.finish_reason,
            usage=self.usage,
            metadata={"id": self.completion_id, "model": self.model},
            tool_calls=calls,
        )

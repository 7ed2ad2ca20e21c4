"""Translation between roomkit's provider types and the Anthropic Messages API.

Outbound: an :class:`AIContext` becomes the request's ``system``, ``messages`` and ``tools``.
Inbound: a ``Message``, or the events of a streamed one, become an :class:`AIResponse`. A
tool call whose input was cut (the message stopped at ``max_tokens`` inside it, or its
streamed JSON does not parse) comes back ``partial`` so the channel refuses it. A response
that cannot be read raises :class:`ProviderResponseError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from anthropic.types import (
    InputJSONDelta,
    Message,
    MessageDeltaUsage,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
    TextBlock,
    TextBlockParam,
    TextDelta,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    ToolUseBlockParam,
    Usage,
)

from roomkit.core.exceptions import ProviderResponseError
from roomkit.providers.ai._tool_calls import tool_call
from roomkit.providers.ai.base import (
    AIContext,
    AIMessage,
    AIResponse,
    AITextPart,
    AITool,
    AIToolCall,
    AIToolCallPart,
    AIToolResultPart,
    AIUsage,
)

__all__ = ["StreamAssembly", "read_message", "to_messages", "to_system", "to_tools"]

PROVIDER = "anthropic"

_Block = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam


def to_system(context: AIContext) -> str | None:
    """The request's system prompt: the context's, then any ``system`` messages, joined."""
    parts = [context.system_prompt] if context.system_prompt else []
    parts += [message.text for message in context.messages if message.role == "system"]
    return "\n\n".join(part for part in parts if part) or None


def to_messages(context: AIContext) -> list[MessageParam]:
    """The conversation as Messages API turns.

    Tool results travel in a ``user`` turn as ``tool_result`` blocks (``is_error`` kept),
    ahead of any text in that turn as the API requires; consecutive messages of one role merge
    into one turn. The API has no speaker name, so a user message's ``name`` is not sent.
    """
    turns: list[tuple[Literal["user", "assistant"], list[_Block]]] = []
    for message in context.messages:
        if message.role == "system":
            continue
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    out: list[MessageParam] = []
    for role, blocks in turns:
        # A stable sort: results first, in call order, then the rest in order.
        blocks.sort(key=lambda block: block["type"] != "tool_result")
        if role == "user":
            out.append({"role": "user", "content": blocks})
        else:
            out.append({"role": "assistant", "content": blocks})
    return out


def _blocks(message: AIMessage) -> list[_Block]:
    if isinstance(message.content, str):
        return [{"type": "text", "text": message.content}] if message.content else []
    blocks: list[_Block] = []
    for part in message.content:
        if isinstance(part, AITextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, AIToolCallPart):
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
            )
        elif isinstance(part, AIToolResultPart):
            result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": part.tool_call_id}
            if part.content:
                result["content"] = part.content
            if part.is_error:
                result["is_error"] = True
            blocks.append(result)
    return blocks


def to_tools(tools: list[AITool]) -> list[ToolParam]:
    """The tools offered, each with its JSON Schema as ``input_schema``."""
    out: list[ToolParam] = []
    for tool in tools:
        param: ToolParam = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description:
            param["description"] = tool.description
        out.append(param)
    return out


def read_message(message: object) -> AIResponse:
    """The :class:`AIResponse` for a non-streamed ``Message``.

    Raises:
        ProviderResponseError: the body is not a message, or a block lacks what it must hold.
    """
    if not isinstance(message, Message):
        raise ProviderResponseError(
            f"Expected a message, got {type(message).__name__}", provider=PROVIDER
        )
    try:
        if not isinstance(message.content, list):
            raise TypeError("content is not a list of blocks")
        text: list[str] = []
        calls: list[AIToolCall] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                text.append(block.text)
            elif isinstance(block, ToolUseBlock):
                calls.append(_call(block.id, block.name, block.input))
        cut = message.stop_reason == "max_tokens"
        if cut and calls and isinstance(message.content[-1], ToolUseBlock):
            calls[-1].partial = True
        return AIResponse(
            content="".join(text),
            finish_reason=message.stop_reason,
            usage=_usage(message.usage),
            metadata={"id": message.id, "model": message.model},
            tool_calls=calls,
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise ProviderResponseError(f"Malformed message: {exc}", provider=PROVIDER) from exc


def _call(call_id: str, name: str, arguments: object) -> AIToolCall:
    if isinstance(arguments, dict):
        return AIToolCall(id=call_id, name=name, arguments=arguments)
    return AIToolCall(id=call_id, name=name, partial=True)


def _usage(usage: Usage) -> AIUsage:
    read = _billed_input(usage.input_tokens, usage)
    return AIUsage(input_tokens=read, output_tokens=usage.output_tokens)


def _billed_input(uncached: int, usage: Usage | MessageDeltaUsage) -> int:
    # Cached input is billed input too: the API reports the three counts apart.
    cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return uncached + cached


@dataclass
class _ToolBlock:
    id: str
    name: str
    fragments: list[str] = field(default_factory=list)
    closed: bool = False


@dataclass
class StreamAssembly:
    """Builds one :class:`AIResponse` from a streamed message's events.

    Feed the events in order; :meth:`feed` returns each text delta so a caller can pass the
    text on as it arrives. Tool input arrives as JSON fragments and is parsed once the stream
    ends.
    """

    text: list[str] = field(default_factory=list)
    tools: dict[int, _ToolBlock] = field(default_factory=dict)
    last_index: int = -1
    message_id: str = ""
    model: str = ""
    stop_reason: str | None = None
    usage: AIUsage = field(default_factory=AIUsage)
    finished: bool = False

    def feed(self, event: RawMessageStreamEvent) -> str:
        """Take one event; returns the text it adds (``""`` for none).

        Raises:
            ProviderResponseError: the event does not fit the stream so far.
        """
        try:
            return self._feed(event)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            message = f"Malformed stream event: {exc}"
            raise ProviderResponseError(message, provider=PROVIDER) from exc

    def _feed(self, event: RawMessageStreamEvent) -> str:
        if isinstance(event, RawMessageStartEvent):
            self.message_id, self.model = event.message.id, str(event.message.model)
            self.usage = _usage(event.message.usage)
        elif isinstance(event, RawContentBlockStartEvent):
            self.last_index = max(self.last_index, event.index)
            block = event.content_block
            if isinstance(block, ToolUseBlock):
                self.tools[event.index] = _ToolBlock(block.id, block.name)
            elif isinstance(block, TextBlock) and block.text:
                self.text.append(block.text)
                return block.text
        elif isinstance(event, RawContentBlockDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextDelta):
                self.text.append(delta.text)
                return delta.text
            if isinstance(delta, InputJSONDelta):
                self.tools[event.index].fragments.append(delta.partial_json)
        elif isinstance(event, RawContentBlockStopEvent):
            if event.index in self.tools:
                self.tools[event.index].closed = True
        elif isinstance(event, RawMessageDeltaEvent):
            self.stop_reason = event.delta.stop_reason
            read = self.usage.input_tokens
            if event.usage.input_tokens is not None:
                read = _billed_input(event.usage.input_tokens, event.usage)
            self.usage = AIUsage(input_tokens=read, output_tokens=event.usage.output_tokens)
        elif isinstance(event, RawMessageStopEvent):
            self.finished = True
        return ""

    def response(self) -> AIResponse:
        """The assembled response.

        Raises:
            ProviderResponseError: the stream ended before the message did.
        """
        if not self.finished:
            raise ProviderResponseError(
                "The stream ended before the message was complete", provider=PROVIDER
            )
        calls = [self._assemble(index, block) for index, block in sorted(self.tools.items())]
        return AIResponse(
            content="".join(self.text),
            finish_reason=self.stop_reason,
            usage=self.usage,
            metadata={"id": self.message_id, "model": self.model},
            tool_calls=calls,
        )

    def _assemble(self, index: int, block: _ToolBlock) -> AIToolCall:
        # A call the stream never closed, or the last one when the token limit struck, is cut.
        cut = not block.closed or (self.stop_reason == "max_tokens" and index == self.last_index)
        return tool_call(block.id, block.name, "".join(block.fragments), cut=cut)

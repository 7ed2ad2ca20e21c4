"""A fake Anthropic Messages API on loopback, and builders for its answers.

The answers are built with the SDK's own types (``anthropic.types.Message``, the raw stream
events) and dumped to JSON, so they have the shapes the SDK reads from the real API. The fake
refuses what the real API refuses, with the API's error shape: a wrong key (401), a block
that is not a valid content block, a ``tool_result`` with no matching ``tool_use`` in the
previous message, a ``tool_use`` left unanswered by the next message (400).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anthropic.types import (
    ContentBlock,
    InputJSONDelta,
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    TextBlock,
    TextBlockParam,
    TextDelta,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    ToolUseBlockParam,
    Usage,
)
from anthropic.types.raw_message_delta_event import Delta
from fake_http import FakeServer, Recorded, Reply, sse
from pydantic import TypeAdapter, ValidationError

MODEL = "claude-opus-5"
API_KEY = "sk-ant-test"

_BLOCK = TypeAdapter(TextBlockParam | ToolUseBlockParam | ToolResultBlockParam)
_TOOLS = TypeAdapter(list[ToolParam])

ToolUse = tuple[str, str, dict[str, Any]]
"""A tool call to script: (id, name, input)."""


def error(status: int, kind: str, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    """An error answer in the API's shape."""
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}
    return Reply.json(body, status=status, headers=headers)


def message(
    text: str = "",
    *,
    tool_uses: Sequence[ToolUse] = (),
    stop_reason: str | None = None,
    input_tokens: int = 25,
    output_tokens: int = 12,
) -> Reply:
    """A complete (non-streamed) message."""
    content: list[ContentBlock] = []
    if text:
        content.append(TextBlock(type="text", text=text))
    for call_id, name, arguments in tool_uses:
        content.append(ToolUseBlock(type="tool_use", id=call_id, name=name, input=arguments))
    built = Message(
        id="msg_01",
        type="message",
        role="assistant",
        model=MODEL,
        content=content,
        stop_reason=stop_reason or ("tool_use" if tool_uses else "end_turn"),  # type: ignore[arg-type]
        stop_sequence=None,
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
    )
    return Reply.json(built.model_dump(mode="json"))


def stream_events(
    text_deltas: Sequence[str] = (),
    *,
    tool_uses: Sequence[tuple[str, str, Sequence[str]]] = (),
    stop_reason: str | None = None,
    finish: bool = True,
) -> list[tuple[str | None, Any]]:
    """The events of a streamed message: text deltas, then each tool's JSON fragments."""
    start = Message(
        id="msg_02",
        type="message",
        role="assistant",
        model=MODEL,
        content=[],
        stop_reason=None,
        stop_sequence=None,
        usage=Usage(input_tokens=30, output_tokens=1),
    )
    events: list[Any] = [RawMessageStartEvent(type="message_start", message=start)]
    index = 0
    if text_deltas:
        events.append(
            RawContentBlockStartEvent(
                type="content_block_start", index=0, content_block=TextBlock(type="text", text="")
            )
        )
        events += [
            RawContentBlockDeltaEvent(
                type="content_block_delta", index=0, delta=TextDelta(type="text_delta", text=piece)
            )
            for piece in text_deltas
        ]
        events.append(RawContentBlockStopEvent(type="content_block_stop", index=0))
        index = 1
    for call_id, name, fragments in tool_uses:
        block = ToolUseBlock(type="tool_use", id=call_id, name=name, input={})
        events.append(
            RawContentBlockStartEvent(type="content_block_start", index=index, content_block=block)
        )
        events += [
            RawContentBlockDeltaEvent(
                type="content_block_delta",
                index=index,
                delta=InputJSONDelta(type="input_json_delta", partial_json=fragment),
            )
            for fragment in fragments
        ]
        events.append(RawContentBlockStopEvent(type="content_block_stop", index=index))
        index += 1
    if finish:
        reason = stop_reason or ("tool_use" if tool_uses else "end_turn")
        events.append(
            RawMessageDeltaEvent(
                type="message_delta",
                delta=Delta(stop_reason=reason, stop_sequence=None),  # type: ignore[arg-type]
                usage=MessageDeltaUsage(output_tokens=40),
            )
        )
        events.append(RawMessageStopEvent(type="message_stop"))
    out: list[tuple[str | None, Any]] = [
        (event.type, event.model_dump(mode="json")) for event in events
    ]
    out.insert(1, ("ping", {"type": "ping"}))
    return out


def streamed(*args: Any, **kwargs: Any) -> Reply:
    """A streamed message, one event per chunk."""
    return Reply.stream(sse(stream_events(*args, **kwargs)))


class FakeAnthropic(FakeServer):
    """The Messages API at ``/v1/messages``, answering from the script."""

    def __init__(self, api_key: str = API_KEY) -> None:
        super().__init__()
        self.api_key = api_key

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        return self.root

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies received, in order."""
        return [request.body for request in self.requests]

    def check(self, request: Recorded) -> Reply | None:
        if request.path != "/v1/messages":
            return error(404, "not_found_error", "Not found")
        bearer = request.header("authorization") or ""
        key = request.header("x-api-key") or bearer.removeprefix("Bearer ")
        if key != self.api_key:
            return error(401, "authentication_error", "invalid x-api-key")
        body = request.body
        if not isinstance(body, dict):
            return error(400, "invalid_request_error", "Request body must be a JSON object")
        for required in ("model", "max_tokens", "messages"):
            if required not in body:
                return error(400, "invalid_request_error", f"{required}: Field required")
        try:
            _TOOLS.validate_python(body.get("tools", []))
        except ValidationError as exc:
            return error(400, "invalid_request_error", f"tools: {exc.errors()[0]['msg']}")
        return _check_messages(body["messages"])


def _check_messages(messages: list[Any]) -> Reply | None:
    for i, turn in enumerate(messages):
        if turn.get("role") not in ("user", "assistant"):
            return error(
                400,
                "invalid_request_error",
                f"messages.{i}.role: Input should be 'user' or 'assistant'",
            )
        content = turn.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for j, block in enumerate(blocks):
            try:
                _BLOCK.validate_python(block)
            except ValidationError:
                return error(
                    400, "invalid_request_error", f"messages.{i}.content.{j}: invalid content block"
                )
            if block["type"] == "text" and not block["text"]:
                return error(
                    400,
                    "invalid_request_error",
                    f"messages.{i}.content.{j}: text content blocks must be non-empty",
                )
        previous = messages[i - 1] if i else None
        asked = _tool_use_ids(previous) if previous and previous["role"] == "assistant" else set()
        for j, block in enumerate(blocks):
            if block["type"] == "tool_result" and block["tool_use_id"] not in asked:
                return error(
                    400,
                    "invalid_request_error",
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {block['tool_use_id']}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message.",
                )
        if turn["role"] == "assistant" and i + 1 < len(messages):
            answered = {
                b["tool_use_id"] for b in _blocks(messages[i + 1]) if b["type"] == "tool_result"
            }
            missing = sorted(_tool_use_ids(turn) - answered)
            if missing:
                return error(
                    400,
                    "invalid_request_error",
                    f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message.",
                )
    return None


def _invalid(message: str) -> Reply:
    return error(400, "invalid_request_error", message)


def _blocks(turn: dict[str, Any]) -> list[dict[str, Any]]:
    content = turn.get("content")
    return list(content) if isinstance(content, list) else []


def _tool_use_ids(turn: dict[str, Any]) -> set[str]:
    return {block["id"] for block in _blocks(turn) if block["type"] == "tool_use"}

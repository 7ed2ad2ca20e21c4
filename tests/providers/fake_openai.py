"""A fake Chat Completions API on loopback, and builders for its answers.

The answers are built with the SDK's own types (``ChatCompletion``, ``ChatCompletionChunk``)
and dumped to JSON. The fake refuses what the real API refuses, with the API's error shape:
a wrong key (401), a message that is not a valid chat message or a ``name`` outside the
allowed pattern, a ``tool`` message that answers no call of the preceding assistant message,
an assistant's call left unanswered (400).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from fake_http import FakeServer, Recorded, Reply, sse
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionMessageToolCallUnion,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import (
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.completion_usage import CompletionUsage
from pydantic import TypeAdapter, ValidationError

MODEL = "gpt-test"
API_KEY = "sk-test"

_MESSAGES = TypeAdapter(list[ChatCompletionMessageParam])
_TOOLS = TypeAdapter(list[ChatCompletionFunctionToolParam])
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

Call = tuple[str, str, str]
"""A tool call to script: (id, name, arguments as the model wrote them)."""


def error(
    status: int,
    message: str,
    *,
    kind: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An error answer in the API's shape."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return Reply.json(body, status=status, headers=headers)


def completion(
    text: str | None = None,
    *,
    calls: Sequence[Call] = (),
    finish_reason: str | None = None,
    prompt_tokens: int = 20,
    completion_tokens: int = 9,
) -> Reply:
    """A complete (non-streamed) chat completion with one choice."""
    tool_calls: list[ChatCompletionMessageToolCallUnion] = [
        ChatCompletionMessageFunctionToolCall(
            id=call_id, type="function", function=Function(name=name, arguments=arguments)
        )
        for call_id, name, arguments in calls
    ]
    built = ChatCompletion(
        id="chatcmpl-1",
        object="chat.completion",
        created=1_700_000_000,
        model=MODEL,
        choices=[
            Choice(
                index=0,
                finish_reason=finish_reason or ("tool_calls" if calls else "stop"),  # type: ignore[arg-type]
                message=ChatCompletionMessage(
                    role="assistant", content=text, tool_calls=tool_calls or None
                ),
            )
        ],
        usage=CompletionUsage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        ),
    )
    return Reply.json(built.model_dump(mode="json"))


def chunks(
    text_deltas: Sequence[str] = (),
    *,
    calls: Sequence[tuple[str, str, Sequence[str]]] = (),
    finish_reason: str | None = None,
    usage: bool = True,
    finish: bool = True,
) -> list[tuple[str | None, Any]]:
    """The chunks of a streamed completion, ``[DONE]`` last: text, then each call's fragments."""

    def chunk(delta: ChoiceDelta | None, reason: str | None = None, **extra: Any) -> Any:
        choices = [] if delta is None else [ChunkChoice(index=0, delta=delta, finish_reason=reason)]  # type: ignore[arg-type]
        built = ChatCompletionChunk(
            id="chatcmpl-2",
            object="chat.completion.chunk",
            created=1_700_000_000,
            model=MODEL,
            choices=choices,
            **extra,
        )
        return built.model_dump(mode="json", exclude_none=True)

    out: list[Any] = [chunk(ChoiceDelta(role="assistant", content=""))]
    out += [chunk(ChoiceDelta(content=piece)) for piece in text_deltas]
    for index, (call_id, name, fragments) in enumerate(calls):
        head = ChoiceDeltaToolCall(
            index=index,
            id=call_id,
            type="function",
            function=ChoiceDeltaToolCallFunction(name=name, arguments=""),
        )
        out.append(chunk(ChoiceDelta(tool_calls=[head])))
        out += [
            chunk(
                ChoiceDelta(
                    tool_calls=[
                        ChoiceDeltaToolCall(
                            index=index, function=ChoiceDeltaToolCallFunction(arguments=fragment)
                        )
                    ]
                )
            )
            for fragment in fragments
        ]
    if finish:
        out.append(chunk(ChoiceDelta(), finish_reason or ("tool_calls" if calls else "stop")))
        if usage:
            tokens = CompletionUsage(prompt_tokens=33, completion_tokens=44, total_tokens=77)
            out.append(chunk(None, usage=tokens))
    events: list[tuple[str | None, Any]] = [(None, payload) for payload in out]
    if finish:
        events.append((None, "[DONE]"))
    return events


def streamed(*args: Any, **kwargs: Any) -> Reply:
    """A streamed completion, one chunk per SSE event."""
    return Reply.stream(sse(chunks(*args, **kwargs)))


class FakeOpenAI(FakeServer):
    """The Chat Completions API at ``/v1/chat/completions``, answering from the script."""

    def __init__(self, api_key: str = API_KEY) -> None:
        super().__init__()
        self.api_key = api_key

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``/v1`` included, as for the real API)."""
        return self.root + "/v1"

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies received, in order."""
        return [request.body for request in self.requests]

    def check(self, request: Recorded) -> Reply | None:
        if request.path != "/v1/chat/completions":
            return error(404, f"Invalid URL (POST {request.path})")
        key = (request.header("authorization") or "").removeprefix("Bearer ")
        if key != self.api_key:
            return error(
                401,
                f"Incorrect API key provided: {key[:4]}****. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                code="invalid_api_key",
            )
        body = request.body
        if not isinstance(body, dict) or "model" not in body or "messages" not in body:
            return error(400, "you must provide a model parameter")
        try:
            _MESSAGES.validate_python(body["messages"])
            _TOOLS.validate_python(body.get("tools", []))
        except ValidationError as exc:
            return error(400, f"Invalid request: {exc.errors()[0]['msg']}")
        return _check_messages(body["messages"])


def _check_messages(messages: list[dict[str, Any]]) -> Reply | None:
    open_calls: set[str] = set()
    asked_by: int | None = None
    for i, message in enumerate(messages):
        name = message.get("name")
        if name is not None and not _NAME.match(name):
            return error(
                400,
                f"Invalid 'messages[{i}].name': string does not match pattern. Expected a "
                "string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                param=f"messages[{i}].name",
                code="invalid_value",
            )
        if message["role"] == "tool":
            if message["tool_call_id"] not in open_calls:
                return error(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{i}].role",
                )
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            return error(
                400,
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(open_calls))}",
                param=f"messages.[{asked_by}].role",
            )
        if message["role"] == "assistant":
            open_calls = {call["id"] for call in message.get("tool_calls") or []}
            asked_by = i
    return None

"""The interface between a channel and a model provider, and the data that crosses it.

A channel builds an :class:`AIContext` (the conversation as :class:`AIMessage` objects, the
tools offered this turn), hands it to an :class:`AIProvider`, and reads back an
:class:`AIResponse`: text, and the :class:`AIToolCall` objects the model wants served. The
results of those calls go back to the model as a ``tool`` message in the next context. Every
type here is a pydantic model, so a context or a response survives a JSON round trip.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

# Every model here builds its validator when first used (``defer_build``): a process that
# imports roomkit without calling a model (a ``roomkit`` command) never builds one.

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
    "ServedCall",
]


class AITool(BaseModel):
    """A tool offered to the model: its name, what it does and its JSON Schema parameters."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    """The name the model calls the tool by."""
    description: str = ""
    """What the tool does, for the model."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """A JSON Schema for the call's arguments."""


class ServedCall(BaseModel):
    """The outcome of a call the provider already ran itself (a sandboxed or hosted tool).

    The channel reports such a call as it is and serves it no further: no gate, no handler.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    result: str = ""
    """What the tool returned, as the model read it."""
    is_error: bool = False
    """True when the provider's run of the tool failed."""


class AIToolCall(BaseModel):
    """A tool call the model made, as the provider reports it."""

    model_config = ConfigDict(defer_build=True)

    id: str
    """The provider-assigned call id; the result goes back under it."""
    name: str
    """The tool the model called."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments the model wrote, parsed from JSON."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Provider-specific details the channel passes along untouched."""
    served: ServedCall | None = None
    """Set when the provider already ran the call; ``None`` for a call the channel serves."""
    partial: bool = False
    """True when the provider cut the arguments short (e.g. at max tokens): never served."""


class AITextPart(BaseModel):
    """Text inside a message."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["text"] = "text"
    """The part's discriminator."""
    text: str
    """The text."""


class AIToolCallPart(BaseModel):
    """A tool call inside an assistant message, kept so the model sees what it asked."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["tool_call"] = "tool_call"
    """The part's discriminator."""
    id: str
    """The call id the matching result refers to."""
    name: str
    """The tool called."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments the call carried."""


class AIToolResultPart(BaseModel):
    """The result of one tool call, sent back to the model.

    ``result`` is another name for ``content``: accepted when the part is built
    (``AIToolResultPart(tool_call_id=..., name=..., result="42")``) and readable as a
    property. The part serialises under ``content``.
    """

    model_config = ConfigDict(defer_build=True)

    type: Literal["tool_result"] = "tool_result"
    """The part's discriminator."""
    tool_call_id: str
    """The id of the call this answers."""
    name: str
    """The tool that was called."""
    content: str = Field(validation_alias=AliasChoices("content", "result"))
    """What the model reads: the result, or a JSON error object."""
    is_error: bool = False
    """True when the call was refused, failed or was cancelled."""

    @property
    def result(self) -> str:
        """What the model reads (the same text as :attr:`content`)."""
        return self.content


AIContentPart = Annotated[
    AITextPart | AIToolCallPart | AIToolResultPart, Field(discriminator="type")
]
"""One part of a message's content, told apart by its ``type``."""


class AIMessage(BaseModel):
    """One message of the conversation the model reads."""

    model_config = ConfigDict(defer_build=True)

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks: ``tool`` messages carry tool results."""
    content: str | list[AIContentPart] = ""
    """Plain text, or a list of text, tool-call and tool-result parts."""
    name: str | None = None
    """For a user message, the participant id of the speaker."""

    @property
    def text(self) -> str:
        """The message's text: the string content, or its text parts joined."""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content if isinstance(part, AITextPart))

    @property
    def tool_call_parts(self) -> list[AIToolCallPart]:
        """The tool calls this message carries, in order."""
        if isinstance(self.content, str):
            return []
        return [part for part in self.content if isinstance(part, AIToolCallPart)]

    @property
    def tool_result_parts(self) -> list[AIToolResultPart]:
        """The tool results this message carries, in order."""
        if isinstance(self.content, str):
            return []
        return [part for part in self.content if isinstance(part, AIToolResultPart)]

    @classmethod
    def user(cls, text: str, *, name: str | None = None) -> AIMessage:
        """A user message.

        Args:
            text: what the user said.
            name: the participant id of the speaker, when known.
        """
        return cls(role="user", content=text, name=name)

    @classmethod
    def assistant(
        cls, text: str = "", tool_calls: Sequence[AIToolCall | AIToolCallPart] = ()
    ) -> AIMessage:
        """An assistant message: its text, and the tool calls it made.

        Args:
            text: the text the model wrote.
            tool_calls: the calls the model made, from the response or as parts.

        Returns:
            A message with plain string content when there are no calls, else a list of
            parts: the text (when not empty), then one part per call.
        """
        if not tool_calls:
            return cls(role="assistant", content=text)
        parts: list[AITextPart | AIToolCallPart | AIToolResultPart] = []
        if text:
            parts.append(AITextPart(text=text))
        for call in tool_calls:
            if isinstance(call, AIToolCallPart):
                parts.append(call)
            else:
                parts.append(
                    AIToolCallPart(id=call.id, name=call.name, arguments=dict(call.arguments))
                )
        return cls(role="assistant", content=parts)

    @classmethod
    def tool_results(cls, parts: Sequence[AIToolResultPart]) -> AIMessage:
        """A ``tool`` message carrying the results of one round of calls.

        Args:
            parts: one result per call, in call order.
        """
        return cls(role="tool", content=list(parts))


class AIContext(BaseModel):
    """Everything a provider needs for one generation."""

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    messages: list[AIMessage] = Field(default_factory=list)
    """The conversation so far, oldest first."""
    system_prompt: str | None = None
    """Instructions for the model, kept apart from the messages."""
    tools: list[AITool] = Field(default_factory=list)
    """The tools offered this turn; a call to any other name is refused."""
    room: Any = None
    """The room the turn runs in, for providers that read it; any object, passed as it is."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form details for the provider."""
    temperature: float | None = None
    """Sampling temperature; the provider's default when ``None``."""
    max_tokens: int | None = None
    """The most tokens to generate; the provider's default when ``None``."""


class AIUsage(BaseModel):
    """Tokens a generation consumed."""

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    """Tokens read."""
    output_tokens: int = 0
    """Tokens written."""


class AIResponse(BaseModel):
    """What the model answered: text, tool calls, or both."""

    model_config = ConfigDict(defer_build=True)

    content: str = ""
    """The text the model wrote."""
    finish_reason: str | None = None
    """Why generation stopped, in the provider's words (``"tool_use"``, ``"max_tokens"``...)."""
    usage: AIUsage | None = None
    """Tokens consumed, when the provider reports them."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Provider-specific details."""
    tool_calls: list[AIToolCall] = Field(default_factory=list)
    """The calls the model wants served, in the order it made them."""


class AIProvider(ABC):
    """A model back end: turns an :class:`AIContext` into an :class:`AIResponse`."""

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model this provider talks to."""

    @property
    def supports_streaming(self) -> bool:
        """True when the provider can stream its output; ``False`` by default."""
        return False

    @abstractmethod
    async def generate(self, context: AIContext) -> AIResponse:
        """Generate one response.

        Args:
            context: the conversation, the tools offered and the generation settings.

        Returns:
            The model's text and tool calls.
        """

    async def close(self) -> None:  # noqa: B027 - optional hook: most providers hold nothing
        """Release what the provider holds (connections, clients); nothing by default."""

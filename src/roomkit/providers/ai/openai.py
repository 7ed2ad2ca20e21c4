"""OpenAIAIProvider: models behind the Chat Completions API, through the official ``openai`` SDK.

Needs the ``openai`` extra (``pip install -e '.[openai]'``). OpenAI's own API speaks
Chat Completions, and so do compatible servers (vLLM, Ollama, ...): point ``base_url`` at
one. The provider translates the turn's context into a request, reads the completion (or its
chunk stream) back into an :class:`~roomkit.providers.ai.base.AIResponse`, turns failures
into typed :class:`~roomkit.core.exceptions.ProviderError` subclasses and retries the
retryable ones itself, with bounded exponential backoff; the SDK's own retries are off.
"""

from __future__ import annotations

from roomkit._extras import requires_extra

with requires_extra("roomkit.providers.ai.openai", "openai"):
    import httpx2
    import openai

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Unpack

from openai.types.chat import ChatCompletionChunk
from openai.types.chat.completion_create_params import CompletionCreateParamsBase

from roomkit.core.exceptions import ProviderAuthError
from roomkit.providers.ai import _openai_wire as wire
from roomkit.providers.ai._loop import VendorErrors
from roomkit.providers.ai._retry import Sleep
from roomkit.providers.ai._vendor import VendorConfig, VendorProvider, VendorSettings, overridden
from roomkit.providers.ai.base import AIContext, AIResponse

__all__ = ["OpenAIAIProvider", "OpenAIConfig", "OpenAISettings"]

PROVIDER = wire.PROVIDER


@dataclass(frozen=True)
class OpenAIConfig(VendorConfig):
    """How to reach a Chat Completions server, and how hard to try.

    The ``model`` (as the server names it), ``api_key`` (``None`` reads ``OPENAI_API_KEY``),
    ``base_url`` (``/v1`` included; ``None`` reads ``OPENAI_BASE_URL``, else OpenAI's) and the
    retry keywords are every vendor's (:class:`~roomkit.providers.ai._vendor.VendorConfig`).

    Example::

        OpenAIAIProvider(OpenAIConfig("llama3.1", api_key="-", base_url="http://gpu:8000/v1"))
    """

    max_tokens: int | None = None
    """The most tokens one response may hold, unless the context sets its own; the server's
    default when ``None``."""
    legacy_max_tokens: bool = False
    """Send the limit as ``max_tokens`` rather than ``max_completion_tokens``, for servers that
    only know the older name."""
    temperature: float | None = None
    """Sampling temperature, unless the context sets its own; the server's default when
    ``None``."""
    organization: str | None = None
    """The OpenAI organization to bill; ``None`` lets the SDK read ``OPENAI_ORG_ID``."""
    stream_usage: bool = True
    """Ask a stream for its token usage (``stream_options.include_usage``)."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("OpenAIConfig needs a model, e.g. model='gpt-4.1'")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        self.check_bounds()


class OpenAISettings(VendorSettings, total=False):
    """The keywords the provider takes over its config: each sets the config's field of the
    same name, and ``None`` keeps the config's value. They are every vendor's
    (:class:`~roomkit.providers.ai._vendor.VendorSettings`) and ``temperature``."""

    temperature: float | None


class OpenAIAIProvider(
    VendorProvider[OpenAIConfig, CompletionCreateParamsBase, ChatCompletionChunk]
):
    """A model provider on the Chat Completions API (OpenAI, or a compatible server).

    Give it a config, or the settings as keywords (keywords override the config's)::

        OpenAIAIProvider(model="gpt-4.1", api_key="...")
        OpenAIAIProvider(model="qwen3", api_key="-", base_url="http://localhost:11434/v1")

    A user message's speaker goes in the message's ``name`` (made safe for the API). The API
    has no error flag on a tool result, so an error result's content starts with
    ``"Error: "``.

    Args:
        config: the settings; built from the keywords when ``None``.
        sleep: how to wait between retries; tests inject one that does not wait.
        **settings: config fields to set over the config's (:class:`OpenAISettings`):
            ``model`` (required without a config), ``api_key``, ``base_url``, ``max_tokens``,
            ``temperature``, ``timeout``, ``max_retries``, ``stream``.

    Raises:
        TypeError: neither a config nor ``model`` was given.
        ValueError: a setting is out of range.
        ProviderAuthError: no API key was given and the SDK found none (``OPENAI_API_KEY``).
    """

    def __init__(
        self,
        config: OpenAIConfig | None = None,
        /,
        *,
        sleep: Sleep = asyncio.sleep,
        **settings: Unpack[OpenAISettings],
    ) -> None:
        super().__init__(
            overridden(
                "OpenAIAIProvider", config, OpenAIConfig, settings, OpenAISettings.__annotations__
            ),
            _ERRORS,
            sleep,
        )
        try:
            self._client: openai.AsyncOpenAI = openai.AsyncOpenAI(
                api_key=self.config.api_key,
                base_url=self.config.base_url,
                organization=self.config.organization,
                timeout=self.config.timeout,
                max_retries=0,
            )
        except openai.OpenAIError as exc:
            # The SDK refuses to build a client without credentials, naming arguments of its
            # own (workload_identity, admin_api_key) this constructor does not take.
            raise ProviderAuthError(
                "No OpenAI API key: pass api_key= or set OPENAI_API_KEY", provider=PROVIDER
            ) from exc

    _assembly = wire.StreamAssembly

    def _build(self, context: AIContext) -> CompletionCreateParamsBase:
        """The call's parameters for ``context``; one left out is the server's default."""
        config = self.config
        params: CompletionCreateParamsBase = {
            "model": config.model,
            "messages": wire.to_messages(context),
        }
        tools = wire.to_tools(context.tools)
        if tools:
            params["tools"] = tools
        temperature = context.temperature if context.temperature is not None else config.temperature
        if temperature is not None:
            params["temperature"] = temperature
        max_tokens = context.max_tokens or config.max_tokens
        if max_tokens is not None and config.legacy_max_tokens:
            params["max_tokens"] = max_tokens
        elif max_tokens is not None:
            params["max_completion_tokens"] = max_tokens
        return params

    async def _once(self, params: CompletionCreateParamsBase) -> AIResponse:
        return wire.read_completion(await self._client.chat.completions.create(**params))

    async def _open(
        self, params: CompletionCreateParamsBase
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        if self.config.stream_usage:
            params = params.copy()
            params["stream_options"] = {"include_usage": True}
        return await self._client.chat.completions.create(**params, stream=True)


def _vendor_words(exc: openai.APIError) -> tuple[str, str | None]:
    """The vendor's message and error type (or code) from the error's body."""
    body = exc.body
    if isinstance(body, Mapping):
        message = body.get("message")
        kind = body.get("type") or body.get("code")
        return (
            message if isinstance(message, str) and message else exc.message,
            kind if isinstance(kind, str) else None,
        )
    return exc.message, None


def _stream_error(exc: Exception) -> tuple[str, str | None] | None:
    # Any other API error reaching here was sent inside a stream, after a 200.
    return _vendor_words(exc) if isinstance(exc, openai.APIError) else None


_ERRORS = VendorErrors(
    provider=PROVIDER,
    status_error=openai.APIStatusError,
    words=_vendor_words,
    unreachable=(openai.APIConnectionError, httpx2.TransportError),
    unreadable=(openai.APIResponseValidationError,),
    stream_error=_stream_error,
)
"""How the SDK's exceptions become typed provider errors."""

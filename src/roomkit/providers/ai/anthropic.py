"""AnthropicAIProvider: Claude through the official ``anthropic`` SDK's Messages API.

Needs the ``anthropic`` extra (``pip install -e '.[anthropic]'``). The provider
translates the turn's context into a Messages request, reads the answer (or its event
stream) back into an :class:`~roomkit.providers.ai.base.AIResponse`, turns the vendor's
failures into typed :class:`~roomkit.core.exceptions.ProviderError` subclasses and retries
the retryable ones itself, with bounded exponential backoff; the SDK's own retries are off.
"""

from __future__ import annotations

from roomkit._extras import requires_extra

with requires_extra("roomkit.providers.ai.anthropic", "anthropic"):
    import anthropic
    import httpx2

import asyncio
from dataclasses import dataclass
from typing import Unpack

from anthropic.types import RawMessageStreamEvent
from anthropic.types.message_create_params import MessageCreateParamsBase

from roomkit.core.exceptions import ProviderAuthError
from roomkit.providers.ai import _anthropic_wire as wire
from roomkit.providers.ai._loop import VendorErrors
from roomkit.providers.ai._retry import Sleep
from roomkit.providers.ai._vendor import VendorConfig, VendorProvider, VendorSettings, overridden
from roomkit.providers.ai.base import AIContext, AIResponse

__all__ = ["AnthropicAIProvider", "AnthropicConfig", "AnthropicSettings"]

PROVIDER = wire.PROVIDER


@dataclass(frozen=True)
class AnthropicConfig(VendorConfig):
    """How to reach Claude, and how hard to try.

    The ``model`` (e.g. ``"claude-opus-5"``), ``api_key`` (``None`` reads
    ``ANTHROPIC_API_KEY``), ``base_url`` (``None`` reads ``ANTHROPIC_BASE_URL``) and the retry
    keywords are every vendor's (:class:`~roomkit.providers.ai._vendor.VendorConfig`).

    Example::

        AnthropicAIProvider(AnthropicConfig("claude-opus-5", api_key=key, stream=True))
    """

    max_tokens: int = 4096
    """The most tokens one response may hold, unless the context sets its own."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("AnthropicConfig needs a model, e.g. model='claude-opus-5'")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        self.check_bounds()


class AnthropicSettings(VendorSettings, total=False):
    """The keywords the provider takes over its config: each sets the config's field of the
    same name, and ``None`` keeps the config's value. They are every vendor's
    (:class:`~roomkit.providers.ai._vendor.VendorSettings`)."""


class AnthropicAIProvider(
    VendorProvider[AnthropicConfig, MessageCreateParamsBase, RawMessageStreamEvent]
):
    """A model provider for Claude, on the Anthropic Messages API.

    Give it a config, or the settings as keywords (keywords override the config's)::

        AnthropicAIProvider(model="claude-opus-5", api_key="...")
        AnthropicAIProvider(AnthropicConfig("claude-opus-5"), stream=True)

    The API has no sampling-temperature parameter in the version the SDK speaks, so
    ``AIContext.temperature`` is not sent.

    Args:
        config: the settings; built from the keywords when ``None``.
        sleep: how to wait between retries; tests inject one that does not wait.
        **settings: config fields to set over the config's (:class:`AnthropicSettings`):
            ``model`` (required without a config), ``api_key``, ``base_url``, ``max_tokens``,
            ``timeout``, ``max_retries``, ``stream``.

    Raises:
        TypeError: neither a config nor ``model`` was given.
        ValueError: a setting is out of range.
        ProviderAuthError: no API key was given and the SDK found none (``ANTHROPIC_API_KEY``).
    """

    def __init__(
        self,
        config: AnthropicConfig | None = None,
        /,
        *,
        sleep: Sleep = asyncio.sleep,
        **settings: Unpack[AnthropicSettings],
    ) -> None:
        super().__init__(
            overridden(
                "AnthropicAIProvider",
                config,
                AnthropicConfig,
                settings,
                AnthropicSettings.__annotations__,
            ),
            _ERRORS,
            sleep,
        )
        self._client: anthropic.AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=self.config.api_key,
            base_url=self.config.base_url,
            timeout=self.config.timeout,
            max_retries=0,
        )
        client = self._client
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise ProviderAuthError(
                "No Anthropic credentials: pass api_key= or set ANTHROPIC_API_KEY",
                provider=PROVIDER,
            )

    _assembly = wire.StreamAssembly

    def _build(self, context: AIContext) -> MessageCreateParamsBase:
        """The Messages API call's parameters for ``context``."""
        params: MessageCreateParamsBase = {
            "model": self.config.model,
            "max_tokens": context.max_tokens or self.config.max_tokens,
            "messages": wire.to_messages(context),
        }
        system = wire.to_system(context)
        if system is not None:
            params["system"] = system
        tools = wire.to_tools(context.tools)
        if tools:
            params["tools"] = tools
        return params

    async def _once(self, params: MessageCreateParamsBase) -> AIResponse:
        return wire.read_message(await self._client.messages.create(**params))

    async def _open(
        self, params: MessageCreateParamsBase
    ) -> anthropic.AsyncStream[RawMessageStreamEvent]:
        return await self._client.messages.create(**params, stream=True)


def _words(exc: anthropic.APIStatusError) -> tuple[str, str | None]:
    return exc.api_message or exc.message, exc.type


_ERRORS = VendorErrors(
    provider=PROVIDER,
    status_error=anthropic.APIStatusError,
    words=_words,
    unreachable=(anthropic.APIConnectionError, httpx2.TransportError),
    unreadable=(anthropic.APIResponseValidationError,),
)
"""How the SDK's exceptions become typed provider errors."""

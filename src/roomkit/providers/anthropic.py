"""The import path RoomKit 0.109 code uses for the Anthropic provider.

The provider lives at :mod:`roomkit.providers.ai.anthropic`, the path the spec gives; this
module re-exports it, so ``from roomkit.providers.anthropic import AnthropicAIProvider,
AnthropicConfig`` and ``AnthropicAIProvider(AnthropicConfig(api_key=..., model=...))`` keep
working. Like the provider, it needs the ``anthropic`` extra.
"""

from roomkit.providers.ai.anthropic import AnthropicAIProvider, AnthropicConfig

__all__ = ["AnthropicAIProvider", "AnthropicConfig"]

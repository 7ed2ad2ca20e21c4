"""The AI channel and its tool loop."""

from roomkit.channels.ai.channel import AIChannel

__all__ = ["AIChannel"]

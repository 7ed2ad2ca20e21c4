"""AI model providers: the interface, a scripted mock, and vendor SDK adapters."""

from roomkit.providers.ai import base
from roomkit.providers.ai.base import *  # noqa: F403 - the package's names are base's and the mock
from roomkit.providers.ai.mock import MockAIProvider

__all__ = ["MockAIProvider"]
__all__ += base.__all__

"""Realtime voice: the provider and transport interfaces, the session, and their mocks."""

from roomkit.voice.realtime import base
from roomkit.voice.realtime.base import *  # noqa: F403 - the package's names are base's and the mocks
from roomkit.voice.realtime.mock import MockCall, MockRealtimeProvider, MockRealtimeTransport

__all__ = ["MockCall", "MockRealtimeProvider", "MockRealtimeTransport"]
__all__ += base.__all__

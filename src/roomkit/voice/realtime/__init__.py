"""Realtime voice: the provider and transport interfaces, the session, and their mocks."""

from roomkit.voice.realtime.base import (
    ClientDisconnectedCallback,
    ErrorCallback,
    RealtimeProvider,
    RealtimeSession,
    RealtimeSessionState,
    RealtimeTransport,
    SessionLostCallback,
    ToolCallCallback,
    ToolCallCancelledCallback,
    TranscriptionCallback,
)
from roomkit.voice.realtime.mock import MockCall, MockRealtimeProvider, MockRealtimeTransport

__all__ = [
    "ClientDisconnectedCallback",
    "ErrorCallback",
    "MockCall",
    "MockRealtimeProvider",
    "MockRealtimeTransport",
    "RealtimeProvider",
    "RealtimeSession",
    "RealtimeSessionState",
    "RealtimeTransport",
    "SessionLostCallback",
    "ToolCallCallback",
    "ToolCallCancelledCallback",
    "TranscriptionCallback",
]

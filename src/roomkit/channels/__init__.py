"""Channels: where messages come from and go to (AI, WebSocket, realtime voice, conference).

Each channel lives in its own module; the package names them too, so RoomKit 0.109's
``from roomkit.channels import RealtimeVoiceChannel`` works. They load on first use: a
channel module imports the layers under it, which must be able to import
``roomkit.channels.base`` without loading every channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roomkit._lazy import lazy_exports

if TYPE_CHECKING:
    from roomkit.channels.ai import AIChannel
    from roomkit.channels.base import Channel
    from roomkit.channels.conference import ConferenceChannel
    from roomkit.channels.realtime_voice import RealtimeVoiceChannel
    from roomkit.channels.websocket import WebSocketChannel

__all__ = [
    "AIChannel",
    "Channel",
    "ConferenceChannel",
    "RealtimeVoiceChannel",
    "WebSocketChannel",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "AIChannel": "ai",
        "Channel": "base",
        "ConferenceChannel": "conference",
        "RealtimeVoiceChannel": "realtime_voice",
        "WebSocketChannel": "websocket",
    },
)

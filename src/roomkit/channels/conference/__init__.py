"""The conference channel: conferences in rooms, with a realtime model and tools that ask people."""

from roomkit.channels.conference.channel import ConferenceChannel
from roomkit.channels.conference.config import ConferenceRealtimeConfig

__all__ = ["ConferenceChannel", "ConferenceRealtimeConfig"]

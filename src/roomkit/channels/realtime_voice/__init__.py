"""The realtime voice channel: a speech-to-speech model in a room, with tools that ask people."""

from roomkit.channels._voice.reasoning import CallTool, ReasoningBackend
from roomkit.channels.realtime_voice.channel import RealtimeVoiceChannel

__all__ = ["CallTool", "RealtimeVoiceChannel", "ReasoningBackend"]

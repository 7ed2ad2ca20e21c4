"""Enumerations shared across the package."""

from __future__ import annotations

from enum import StrEnum, unique

__all__ = ["ChannelType"]


@unique
class ChannelType(StrEnum):
    """The kind of a channel, and so the door a tool call came through."""

    AI = "ai"
    REALTIME_VOICE = "realtime_voice"
    CONFERENCE = "conference"
    WEBSOCKET = "websocket"
    MCP = "mcp"
    """A tool call from an MCP client, through ``roomkit mcp``."""

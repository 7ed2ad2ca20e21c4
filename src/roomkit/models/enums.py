"""Enumerations shared across the package."""

from __future__ import annotations

from enum import StrEnum, unique

__all__ = ["ChannelType", "HookExecution", "HookTrigger"]


@unique
class ChannelType(StrEnum):
    """The kind of a channel, and so the door a tool call came through."""

    AI = "ai"
    REALTIME_VOICE = "realtime_voice"
    CONFERENCE = "conference"
    WEBSOCKET = "websocket"
    MCP = "mcp"
    """A tool call from an MCP client, through ``roomkit mcp``."""


@unique
class HookTrigger(StrEnum):
    """The moments of a turn that hooks can attach to."""

    BEFORE_TOOL_USE = "before_tool_use"
    """Before a tool call is served: gate it, or rewrite its arguments. Fails closed."""
    ON_TOOL_CALL = "on_tool_call"
    """After a tool call has an outcome: observe (or, for a success, override) the report."""
    ON_USER_INPUT_REQUIRED = "on_user_input_required"
    """A human-input request opened: notify the person; a block rejects the request."""


@unique
class HookExecution(StrEnum):
    """How a hook runs."""

    SYNC = "sync"
    """In the chain, in priority order, able to allow, block or modify."""
    ASYNC = "async"
    """As a fire-and-forget observer once the SYNC chain let the event through."""

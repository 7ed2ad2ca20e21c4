"""Declare: the tools a turn offers the model.

A turn offers the channel's ``tools=``, the human-input handler's ``tool_definitions`` and the
tools of the room binding's ``metadata["tools"]``. A human-input name that none of them
offers is never asked: the channel warns once per name so the misconfiguration shows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from roomkit.providers.ai.base import AITool
from roomkit.tools.compose import ToolHandler
from roomkit.tools.human_input import HumanInputToolHandler
from roomkit.tools.validation import check_tool_schema

__all__ = [
    "binding_tools",
    "call_bound",
    "check_host_handler",
    "check_unique_tools",
    "warn_never_offered",
]

human_logger = logging.getLogger("roomkit.tools.human_input")
logger = logging.getLogger("roomkit.channels.ai")


def check_unique_tools(
    channel_id: str, host: Iterable[AITool], human: Iterable[AITool]
) -> dict[str, AITool]:
    """The channel's own toolset, refusing two tools under one name."""
    tools: dict[str, AITool] = {}
    human_names = set()
    for tool in human:
        human_names.add(tool.name)
        tools[tool.name] = tool
    for tool in host:
        if not isinstance(tool, AITool):
            raise TypeError(f"tools must hold AITool objects, got {type(tool).__name__}")
        if tool.name in human_names:
            raise ValueError(
                f"Tool '{tool.name}' is a tool channel '{channel_id}' serves itself: rename it"
            )
        if tool.name in tools:
            raise ValueError(
                f"Tool '{tool.name}' is given twice to channel '{channel_id}': "
                "two tools cannot serve one name, rename one of them"
            )
        tools[tool.name] = tool
    for tool in tools.values():
        check_tool_schema(tool.name, tool.parameters)
    return tools


def binding_tools(metadata: Mapping[str, Any]) -> list[AITool]:
    """The tools a room binding offers (``metadata["tools"]``: AITool objects or dicts)."""
    raw = metadata.get("tools") or ()
    tools = []
    for item in raw:
        tool = item if isinstance(item, AITool) else AITool.model_validate(item)
        check_tool_schema(tool.name, tool.parameters)
        tools.append(tool)
    return tools


def warn_never_offered(
    channel_id: str, human_names: Iterable[str], offered: Mapping[str, AITool], warned: set[str]
) -> None:
    """Warn, once per channel per name, about human-input tools the model is never offered."""
    missing = sorted(name for name in human_names if name not in offered and name not in warned)
    if not missing:
        return
    warned.update(missing)
    human_logger.warning(
        "Channel %s intercepts human-input tool(s) %s but never offers them to the model: "
        "declare them via HumanInputToolHandler(tool_definitions=...) or the channel's tools, "
        "or no human will ever be asked.",
        channel_id,
        missing,
    )


class _Bounded(Protocol):
    tool_timeouts: dict[str, float | None]
    tool_timeout_seconds: float | None
    human_input_handler: HumanInputToolHandler | None


def call_bound(channel: _Bounded, name: str) -> float | None:
    """How long a call to ``name`` may run on ``channel``, or ``None`` for no channel bound.

    ``tool_timeouts[name]`` wins; a human-input name has none (its handler's timeout applies);
    any other tool gets ``tool_timeout_seconds``.
    """
    if name in channel.tool_timeouts:
        return channel.tool_timeouts[name]
    human = channel.human_input_handler
    if human is not None and name in human.tool_names:
        return None
    return channel.tool_timeout_seconds


def check_host_handler(channel_id: str, handler: ToolHandler | None) -> ToolHandler | None:
    """Check a channel's host ``tool_handler``; warn when it is a HumanInputToolHandler."""
    if handler is not None and not callable(handler):
        raise TypeError(f"tool_handler must be an async callable, got {handler!r}")
    if isinstance(handler, HumanInputToolHandler):
        human_logger.warning(
            "Channel %s serves a HumanInputToolHandler as its tool_handler: pass it as "
            "human_input_handler= so its own timeout, ON_USER_INPUT_REQUIRED and the "
            "channel's close apply to it",
            channel_id,
        )
    return handler

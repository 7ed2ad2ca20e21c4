"""Declare: the tools a channel offers the model, and the channel that serves them.

A channel offers its ``tools=``, the human-input handler's ``tool_definitions`` and, on an AI
channel, the tools of the room binding's ``metadata["tools"]``. Two tools under one name are
refused when they are given, and so is a name a model provider refuses (which would make it
refuse every tool of the turn) or parameters that are no JSON Schema for an object. A
human-input name that nothing offers is never asked: the channel warns once per name so the
misconfiguration shows.

:class:`ToolChannel` is what the AI and the voice channel share as servers of tool calls: the
checked toolset, the host's ``tool_handler``, the human-input handler (routed to the kit's
ON_USER_INPUT_REQUIRED on the channel's own door, and closed for the channel alone) and the
bounds :func:`~roomkit.channels._calls.bounds.decide` reads.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.bounds import decide, seconds
from roomkit.channels.base import Channel
from roomkit.models.shown import shown
from roomkit.providers.ai.base import AITool
from roomkit.tools.compose import ToolHandler
from roomkit.tools.human_input import HumanInputToolHandler
from roomkit.tools.validation import check_tool_name, check_tool_schema

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = [
    "ToolChannel",
    "binding_tools",
    "check_host_handler",
    "check_kind",
    "check_unique_tools",
    "host_tools",
    "warn_never_offered",
]

human_logger = logging.getLogger("roomkit.tools.human_input")


def check_kind(name: str, value: object, kind: type, *, optional: bool = False) -> None:
    """Check that ``value`` (the argument ``name``) is a ``kind``, or ``None`` if ``optional``.

    Raises:
        TypeError: it is not.
    """
    if optional and value is None:
        return
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")


def host_tools(tools: object) -> list[AITool]:
    """The host's tool definitions (``AITool`` objects or dicts) as ``AITool`` objects.

    Raises:
        TypeError: ``tools`` is a single tool, or not a list of them.
        pydantic.ValidationError: a dict is not a valid tool definition.
    """
    if tools is None:
        return []
    if isinstance(tools, str | Mapping) or not isinstance(tools, Sequence):
        raise TypeError("tools must be a list of AITool objects (or dicts), not a single tool")
    return [tool if isinstance(tool, AITool) else AITool.model_validate(tool) for tool in tools]


def check_unique_tools(
    channel_id: str, host: Iterable[AITool], human: Iterable[AITool]
) -> dict[str, AITool]:
    """The channel's own toolset, refusing two tools under one name.

    Raises:
        TypeError: ``host`` holds something other than an ``AITool``.
        ValueError: two tools share a name, a host tool takes a human-input tool's name, a
            name is one model providers refuse, or parameters are no JSON Schema for an
            object of arguments.
    """
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
                f"Tool {shown(tool.name)} is a tool channel {shown(channel_id)} serves itself: "
                "rename it"
            )
        if tool.name in tools:
            raise ValueError(
                f"Tool {shown(tool.name)} is given twice to channel {shown(channel_id)}: "
                "two tools cannot serve one name, rename one of them"
            )
        tools[tool.name] = tool
    for tool in tools.values():
        check_tool_name(tool.name)
        check_tool_schema(tool.name, tool.parameters)
    return tools


def binding_tools(metadata: Mapping[str, Any]) -> list[AITool]:
    """The tools a room binding offers (``metadata["tools"]``: AITool objects or dicts).

    Raises:
        pydantic.ValidationError: a dict is not a valid tool definition.
        ValueError: a tool's name is one model providers refuse, or its parameters are no
            JSON Schema for an object of arguments.
    """
    raw = metadata.get("tools") or ()
    tools = []
    for item in raw:
        tool = item if isinstance(item, AITool) else AITool.model_validate(item)
        check_tool_name(tool.name)
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


class ToolChannel(Channel):
    """A channel whose model calls tools: its toolset, its handlers and its bounds.

    Args:
        channel_id: the channel's id.
        tools: the host's tool definitions.
        tool_handler: serves the host's tools.
        human_input_handler: the tools that ask a person, served first.
        tool_timeout_seconds: the bound of a host tool call (``None``: unbounded).
        tool_timeouts: per-tool bounds, overriding the defaults (human-input names included).
    """

    def __init__(
        self,
        channel_id: str,
        *,
        tools: Iterable[AITool],
        tool_handler: ToolHandler | None,
        human_input_handler: HumanInputToolHandler | None,
        tool_timeout_seconds: float | None,
        tool_timeouts: Mapping[str, float | None] | None,
    ) -> None:
        super().__init__(channel_id)
        check_kind("human_input_handler", human_input_handler, HumanInputToolHandler, optional=True)
        self.human_input_handler = human_input_handler
        self.tool_timeout_seconds = seconds("tool_timeout_seconds", tool_timeout_seconds)
        self.tool_timeouts = {
            name: seconds(f"tool_timeouts[{name!r}]", bound)
            for name, bound in (tool_timeouts or {}).items()
        }
        human_tools = human_input_handler.tools if human_input_handler is not None else []
        self._tools = check_unique_tools(channel_id, tools, human_tools)
        self._tool_handler: ToolHandler | None = None
        self.tool_handler = tool_handler
        self._warned: set[str] = set()
        self._registration: int | None = None
        self.closing = False
        """True once ``close()`` started: nothing new starts, cut calls say the channel closed."""

    @property
    def tool_handler(self) -> ToolHandler | None:
        """The host's tool handler; replacing it leaves the human-input tools served."""
        return self._tool_handler

    @tool_handler.setter
    def tool_handler(self, handler: ToolHandler | None) -> None:
        self._tool_handler = check_host_handler(self.channel_id, handler)

    @property
    def tools(self) -> list[AITool]:
        """The tools the channel offers (its own and the human-input handler's)."""
        return list(self._tools.values())

    def set_tools(self, tools: Sequence[AITool | Mapping[str, Any]]) -> None:
        """Offer ``tools`` in place of the host's tools given so far, from the next turn on
        (on a voice channel, the next session): a turn running keeps the tools it began
        with. The human-input handler's tools stay offered.

        Raises:
            TypeError: ``tools`` is a single tool, or not a list of them.
            ValueError: two tools share a name, or one takes a human-input tool's name, or
                a tool's name is not letters, digits, ``_`` and ``-`` (1 to 64 of them),
                or its parameters are not a valid JSON Schema; the tools offered before
                stay.
        """
        human = self.human_input_handler
        human_tools = human.tools if human is not None else []
        self._tools = check_unique_tools(self.channel_id, host_tools(tools), human_tools)

    def call_bound(self, name: str) -> float | None:
        """How long a call to ``name`` may run, or ``None`` for no channel bound."""
        return decide(self, name).channel

    def set_framework(self, kit: RoomKit) -> None:
        """Wire the channel to ``kit``: its human input to ON_USER_INPUT_REQUIRED."""
        super().set_framework(kit)
        if self.human_input_handler is not None:
            self._registration = kit.route_human_input(
                self.human_input_handler.handler, self.channel_id, channel_type=self.channel_type
            )

    def warn_unoffered(self, offered: Mapping[str, AITool]) -> None:
        """Warn once per name about human-input tools ``offered`` leaves out."""
        human = self.human_input_handler
        if human is not None:
            warn_never_offered(self.channel_id, human.tool_names, offered, self._warned)

    async def close(self) -> None:
        """Cut what the channel runs (an AI channel's turns, a voice channel's sessions):
        their requests are withdrawn, their calls reported cancelled. Then close the
        human-input handler for this channel only.

        Called from inside one of its own calls (a hook, a tool), it cuts that call too:
        the closing finishes, and the caller sees ``CancelledError``.
        """
        await self._close_once(self._close)

    async def _close(self) -> None:
        self.closing = True
        await self._cut_running()
        await self.close_human_input()

    @abstractmethod
    async def _cut_running(self) -> None:
        """End what the channel runs, for :meth:`close`: ``closing`` is ``True`` already."""

    async def close_human_input(self) -> None:
        """Close the human-input handler for this channel only (its requests withdrawn)."""
        human = self.human_input_handler
        if human is not None:
            await human.handler.close(channel_id=self.channel_id, registration=self._registration)

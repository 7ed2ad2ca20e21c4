"""ConferenceRealtimeConfig: the speech-to-speech model a conference runs, and its tools.

The config is checked when it is built and again whenever a field is replaced, so a bad
value raises where it is written. The channel reads it when it uses it: the tools and the
system prompt when a room's session starts, the tool handler and the bounds at every call.
The provider and the human-input handler are wired when the config is plugged, so they are
fixed once the config is built: plug a new config to change them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from roomkit.channels._calls.bounds import decide, seconds
from roomkit.channels._calls.declare import check_kind, check_unique_tools, host_tools
from roomkit.channels.conference._host_handler import RoomToolHandler, host_handler
from roomkit.providers.ai.base import AITool
from roomkit.tools.compose import ToolHandler
from roomkit.tools.human_input import HumanInputToolHandler
from roomkit.voice.realtime.base import RealtimeProvider

__all__ = ["ConferenceRealtimeConfig", "RoomToolHandler"]

_FIXED = frozenset({"provider", "human_input_handler"})


@dataclass(eq=False)
class ConferenceRealtimeConfig:
    """A conference's realtime model: one session per room, with the tools it may call.

    Raises:
        TypeError: a field has the wrong type (a provider that is not a
            ``RealtimeProvider``, a tool handler that is not callable or takes neither
            ``(name, arguments)`` nor ``(room_id, name, arguments)``, ...).
        ValueError: a host tool takes the name of a definition the human-input handler gives,
            two tools share a name, a tool's name is not letters, digits, ``_`` and ``-``
            (1 to 64 of them), its parameters are no JSON Schema for an object, or a bound
            is not positive.
        AttributeError: ``provider`` or ``human_input_handler`` is replaced after the config
            is built.
    """

    provider: RealtimeProvider
    """The speech-to-speech model; one session per room."""
    _: KW_ONLY
    tools: Sequence[AITool | Mapping[str, Any]] | None = None
    """Definitions of the host's tools (``AITool`` objects or dicts), declared to every
    session; read back as a list of ``AITool``."""
    tool_handler: ToolHandler | RoomToolHandler | None = None
    """Serves the host's tools: ``await tool_handler(name, arguments)``, or RoomKit 0.109's
    ``await tool_handler(room_id, name, arguments)``, told apart by its signature when it is
    given. Replacing it leaves the human-input tools served."""
    human_input_handler: HumanInputToolHandler | None = None
    """Tools that ask a person: declared to every session and served before
    ``tool_handler``, under the handler's own timeout."""
    tool_timeout_seconds: float | None = 10.0
    """The bound of a host tool call (``None``: unbounded)."""
    tool_timeouts: Mapping[str, float | None] | None = None
    """Per-tool bounds, overriding the defaults (human-input names included); read back as
    a dict."""
    system_prompt: str | None = None
    """The model's instructions in every session."""
    _host: ToolHandler | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_kind("provider", self.provider, RealtimeProvider)
        check_kind(
            "human_input_handler", self.human_input_handler, HumanInputToolHandler, optional=True
        )
        object.__setattr__(self, "_host", host_handler(self.tool_handler))
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise TypeError(f"system_prompt must be a string, got {self.system_prompt!r}")
        # A passed-through object is normalised in place: the checked values are kept.
        object.__setattr__(self, "tools", host_tools(self.tools))
        object.__setattr__(
            self,
            "tool_timeout_seconds",
            seconds("tool_timeout_seconds", self.tool_timeout_seconds),
        )
        object.__setattr__(
            self,
            "tool_timeouts",
            {
                name: seconds(f"tool_timeouts[{name!r}]", bound)
                for name, bound in (self.tool_timeouts or {}).items()
            },
        )
        self.declared_tools()
        object.__setattr__(self, "_built", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if not self.__dict__.get("_built"):
            object.__setattr__(self, name, value)
            return
        if name in _FIXED:
            raise AttributeError(
                f"{name} is fixed once the config is built: plug a new ConferenceRealtimeConfig"
            )
        checked = replace(self, **{name: value})
        object.__setattr__(self, name, getattr(checked, name))
        if name == "tool_handler":
            object.__setattr__(self, "_host", checked._host)

    def declared_tools(self) -> dict[str, AITool]:
        """The tools every session declares, by name: the human-input handler's, then the
        host's.

        A definition on ``tools=`` under a human-input name the handler gives no definition
        for declares that tool; the handler serves it, as on every channel.

        Raises:
            ValueError: a host tool takes the name of a definition the human-input handler
                gives, or two share a name.
        """
        human = self.human_input_handler
        human_tools = human.tools if human is not None else []
        return check_unique_tools("conference", host_tools(self.tools), human_tools)

    def host_handler(self) -> ToolHandler | None:
        """The host tool handler as the channel calls it, ``await handler(name, arguments)``;
        a ``(room_id, name, arguments)`` one gets the call's room first."""
        return self._host

    def call_bound(self, name: str) -> float | None:
        """How long a call to ``name`` may run, or ``None`` for no channel bound.

        ``tool_timeouts[name]`` wins; a human-input name has none (its handler's timeout
        applies); any other tool gets ``tool_timeout_seconds``.
        """
        return decide(self, name).channel

"""The names of the tools a Pydantic AI run may defer for approval.

A run's toolset (``ctx.tool_manager.toolset``) combines the agent's toolsets and the run's.
Function toolsets list every tool they hold, offered this step or not; the wrappers that
prepare, filter, mark for approval or search tools keep those names (a prepare function
cannot rename a tool). Any other toolset leaves the names unknown: one that gives tools as
the run goes (an MCP server, a ``DynamicToolset``, deferred capabilities) or may rename them
(``PrefixedToolset``, ``RenamedToolset``, a wrapper of your own).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.toolsets import (
    AbstractToolset,
    ApprovalRequiredToolset,
    CombinedToolset,
    FilteredToolset,
    FunctionToolset,
    PreparedToolset,
    WrapperToolset,
)

__all__ = ["agent_tool_names", "tool_names"]

_KEEPING = (ApprovalRequiredToolset, FilteredToolset, PreparedToolset)
"""Wrappers whose tools are some of their wrapped toolset's, under the same names."""
_KEEPING_INSIDE = frozenset({"CapabilityOwnedToolset", "ToolSearchToolset"})
"""Pydantic AI's wrappers, of its private modules, that keep the names: the one that binds a
capability's toolset to it, and the tool search every run's toolset sits in."""


def tool_names(ctx: Any) -> frozenset[str] | None:
    """The names of the tools of the run ``ctx`` belongs to; ``None`` when some are not
    known before the run gives them."""
    manager = getattr(ctx, "tool_manager", None)
    toolset = getattr(manager, "toolset", None)
    if not isinstance(toolset, AbstractToolset):
        return None
    # The tools offered this step, under the names the model calls them by.
    offered = {str(name) for name in getattr(manager, "tools", None) or {}}
    return _names([toolset], offered)


def agent_tool_names(agent: Any, more: Any = None) -> frozenset[str] | None:
    """The names of the tools a run of ``agent`` has, with the run's toolsets ``more``;
    ``None`` when some are not known before the run gives them."""
    toolsets = getattr(agent, "toolsets", None)
    if toolsets is None:
        return None
    return _names([*toolsets, *(more or ())], set())


def _names(toolsets: list[Any], names: set[str]) -> frozenset[str] | None:
    """``names`` and those of the tools in ``toolsets``; ``None`` when some are not known."""
    waiting: list[Any] = list(toolsets)
    while waiting:
        each = waiting.pop()
        if isinstance(each, CombinedToolset):
            waiting.extend(each.toolsets)
        elif isinstance(each, FunctionToolset):
            names.update(each.tools)
        elif isinstance(each, WrapperToolset) and _keeps_names(each):
            waiting.append(each.wrapped)
        else:
            return None
    return frozenset(names)


def _keeps_names(wrapper: WrapperToolset[Any]) -> bool:
    """Whether ``wrapper`` gives its wrapped toolset's tools under their own names."""
    kind = type(wrapper)
    if kind is WrapperToolset or isinstance(wrapper, _KEEPING):
        return True
    return kind.__name__ in _KEEPING_INSIDE and kind.__module__.startswith("pydantic_ai.")

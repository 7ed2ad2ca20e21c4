"""The names under which an OpenAI Agents SDK run may hold a tool call for approval.

A run's approvals name the tool of the agent that made the call: the starting agent's, an
agent it hands off to, or an agent it runs as a tool (whose approvals come up to the outer
run). Their ``tools`` lists name them all, unless one of them takes tools from MCP (its
``mcp_servers``, or a ``HostedMCPTool``, whose approvals name the server's tools) or hands
off through a ``Handoff`` that does not say to which agent: then the names are not known.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, HostedMCPTool

__all__ = ["missing_tools", "tool_names"]


def tool_names(agent: Any) -> frozenset[str] | None:
    """The names of the tools ``agent`` and the agents it reaches have; ``None`` when some
    are not known before the run asks a server."""
    names: set[str] = set()
    seen: set[int] = set()
    waiting: list[Any] = [agent]
    while waiting:
        each = waiting.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        if not isinstance(each, Agent) or each.mcp_servers:
            return None
        for tool in each.tools:
            name = getattr(tool, "name", None)
            if isinstance(tool, HostedMCPTool) or not isinstance(name, str):
                return None
            names.add(name)
            # An agent run as a tool (Agent.as_tool()): its approvals reach this run.
            nested = getattr(tool, "_agent_instance", None)
            if nested is not None:
                waiting.append(nested)
        for handoff in each.handoffs:
            target = handoff if isinstance(handoff, Agent) else _handed_to(handoff)
            if target is None:
                return None
            waiting.append(target)
    return frozenset(names)


def missing_tools(items: list[Any], run_config: Any) -> list[str]:
    """The tools of the function calls ``items`` whose agent (as the run's state loaded it)
    no longer has them, which the SDK would fail the run on once they are approved; ``[]``
    when the run's config has the model read that a tool is missing, or the agent's tools
    are known only as it runs (MCP)."""
    if getattr(run_config, "tool_not_found_behavior", None) == "return_error_to_model":
        return []
    missing: list[str] = []
    for item in items:
        agent = item.agent
        raw_type = getattr(item.raw_item, "type", None)
        if raw_type != "function_call" or item.tool_namespace is not None:
            continue
        if not isinstance(agent, Agent) or agent.mcp_servers:
            continue
        names = {getattr(tool, "name", None) for tool in agent.tools}
        if any(isinstance(tool, HostedMCPTool) for tool in agent.tools):
            continue
        if item.tool_name not in names:
            missing.append(str(item.tool_name))
    return missing


def _handed_to(handoff: Any) -> Any:
    """The agent a ``Handoff`` made by ``handoff(agent)`` hands to; ``None`` when it does not
    say."""
    reference = getattr(handoff, "_agent_ref", None)
    return reference() if callable(reference) else None

"""Approvals entries that name no tool of the framework's agent.

A pause of a tool no entry names is held under the default rule, so an entry whose name is
misspelt (``"wrie"`` for ``wire``) leaves its tool to the default approver, without a word.
Where an adapter can read the names of the agent's tools at run time, each run logs one
warning naming such entries and the tools the agent has: LangGraph's and the OpenAI Agents
SDK's ``run`` and ``start`` (a ``resume`` goes on with the run ``start`` checked), Pydantic
AI's deferred handler on a run's first deferred calls. Where it cannot (tools a server or a
function gives while the run goes), it says nothing. Nothing is refused: a tool may be added
while the run goes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

__all__ = ["warn_unmatched"]

logger = logging.getLogger("roomkit.adapters")

_SHOWN = 30
"""How many of the agent's tool names the warning lists."""


def warn_unmatched(
    approvals: Mapping[str, object], tools: Iterable[str] | None, *, where: str
) -> None:
    """Log one warning naming the entries of ``approvals`` that are none of ``tools``.

    Args:
        approvals: the rules by tool name (the adapter's ``approvals=``).
        tools: the names of the agent's tools; ``None`` when they cannot be known, which
            logs nothing.
        where: the entry point, as the message names it (``"openai_agents.run()"``).
    """
    if tools is None or not approvals:
        return
    known = set(tools)
    unmatched = [name for name in approvals if name not in known]
    if not unmatched:
        return
    names = sorted(known)
    listed = ", ".join(repr(name) for name in names[:_SHOWN]) or "none"
    if len(names) > _SHOWN:
        listed += f" and {len(names) - _SHOWN} more"
    logger.warning(
        "%s: approvals names %s, which %s no tool of the agent (its tools: %s): a call of "
        "a tool no entry names is held under the default rule; correct the name",
        where,
        ", ".join(repr(name) for name in unmatched),
        "is" if len(unmatched) == 1 else "are",
        listed,
    )

"""What :func:`~roomkit.adapters.pydantic_ai.resume` checks of what it is given before
anyone waits: that the agent has the tools people approved calls of, and that the
application's results answer the calls roomkit does not ask about, and only those."""

from __future__ import annotations

from typing import Any

from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from roomkit.adapters._pauses import Pause, Verdict
from roomkit.adapters.pydantic_ai._tools import agent_tool_names
from roomkit.models.shown import shown

__all__ = ["check_given", "check_tools"]


def check_tools(agent: Any, more: Any, decided: list[tuple[Any, Pause, Verdict]]) -> None:
    """Raise unless ``agent`` (with the run's toolsets ``more``) has the tool of every call
    a person approved: Pydantic AI would tell the model the tool is unknown, and the
    approved call would never run.

    Raises:
        ValueError: it lacks one (named).
    """
    names = agent_tool_names(agent, more)
    if names is None:
        return
    lacking = sorted(
        {
            part.tool_name
            for part, pause, verdict in decided
            if pause.kind == "approval" and verdict.kind in ("approve", "edit")
        }
        - names
    )
    if lacking:
        raise ValueError(
            f"the run was approved to call {', '.join(map(shown, lacking))}, which the agent "
            "given to resume() does not have: resume it with the agent (and toolsets) of the "
            "run that ended with these requests; nothing was run, and the decisions stay for "
            "that resume"
        )


def check_given(
    requests: DeferredToolRequests, opened: list[tuple[Any, Pause, str]], given: object
) -> None:
    """Raise unless ``given``, the application's results, answers every call of ``requests``
    that roomkit does not ask about (``opened`` are those it asks about), and none of those.

    Raises:
        TypeError: ``given`` is neither ``None`` nor a ``DeferredToolResults``.
        ValueError: it names a call roomkit asks about, or leaves one of the others out.
    """
    if given is not None and not isinstance(given, DeferredToolResults):
        raise TypeError(
            "pydantic_ai.resume(): deferred_tool_results must be the DeferredToolResults of "
            "the calls the run deferred for the application, got "
            f"{type(given).__name__}; nothing was run"
        )
    asked = {part.tool_call_id for part, _, _ in opened}
    named = set() if given is None else {*given.calls, *given.approvals}
    if named & asked:
        raise ValueError(
            "pydantic_ai.resume(): deferred_tool_results names calls that roomkit asks people "
            f"about ({', '.join(map(shown, sorted(named & asked)))}): their results are the "
            "people's decisions; pass only those of the calls deferred for the application; "
            "nothing was run, and the decisions stay"
        )
    lacking = [
        part
        for part in [*requests.approvals, *requests.calls]
        if part.tool_call_id not in asked | named
    ]
    if lacking:
        calls = ", ".join(f"{shown(p.tool_name)} ({shown(p.tool_call_id)})" for p in lacking)
        raise ValueError(
            f"pydantic_ai.resume(): the run also deferred {calls}, which roomkit does not ask "
            "about (an 'external' call, or one no deferred_handler opened): pass their results "
            "as resume(..., deferred_tool_results=DeferredToolResults(calls={...})), as "
            "Pydantic AI takes a result for every deferred call; nothing was run, and the "
            "decisions stay"
        )

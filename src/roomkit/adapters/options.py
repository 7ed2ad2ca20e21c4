"""The keywords every framework adapter takes besides its handler, declared here once.

:func:`roomkit.adapters.langgraph.run` (and ``start``, ``resume``),
:func:`roomkit.adapters.openai_agents.run` (and ``start``, ``resume``) and
:func:`roomkit.adapters.pydantic_ai.deferred_handler` (and ``results_for``, ``resume``) take
a human-input ``handler`` and the options of :class:`AskOptions`: whose approval each tool
needs, the person's deadline, who is asked, the room and the ladder. A set of options may be
kept as a dict and spread, so that a durable run's resumer asks under the same rules as the
run that paused::

    options: AskOptions = {"approvals": ["pay"], "timeout": 600, "actor": "alice"}
    pending = await langgraph.start(graph, input, config, handler=handler, **options)
    pending = await langgraph.resume(graph, config, handler=handler, **options)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from roomkit.tools.approvals import Approval
    from roomkit.tools.human_input.ladder import Ladder

__all__ = ["DEFAULT_TIMEOUT", "AskOptions"]

DEFAULT_TIMEOUT = 3600.0
"""The person's deadline, in seconds, when neither the call nor the rule gives one."""


class AskOptions(TypedDict, total=False):
    """Who is asked about a framework's pauses, and how; every one may be left out."""

    approvals: Mapping[str, Approval] | Iterable[str] | None
    """Tool names, or names to :class:`~roomkit.tools.approvals.Approval` (as
    ``HumanInputToolHandler(approvals=...)`` takes them); an approval of a tool not named is
    held under the default rule, so that nothing the framework holds runs unseen. A name that
    is no tool of the agent (a misspelling) is logged as a warning, once per run, where the
    adapter can read the agent's tools."""
    timeout: float
    """The person's deadline in seconds, where a rule gives none (:data:`DEFAULT_TIMEOUT`
    when left out)."""
    actor: str | None
    """Who is asked the questions, and who decides approvals whose rule names no
    approvers."""
    room: str
    """The room the requests belong to (the desk lists them there); ``""`` by default."""
    ladder: Ladder | None
    """Reminders and escalations for every request, and a question's default answer when
    nobody answers in time (``Ladder(on_expiry=default(...))``); an approval nobody decides
    in time ends by its rule's ``on_expiry`` (``"approve"`` runs the call)."""

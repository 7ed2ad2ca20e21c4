"""Checks: the channel's own refusals of a call, before any hook or handler runs.

A call is refused when its arguments were cut (the provider stopped before they were
complete, or they hold text UTF-8 cannot encode and were screened), when the model made more
calls at once than a realtime session runs (:data:`MAX_CALLS_AT_ONCE`), when the tool was not
offered where the call was made, and when its arguments break the tool's JSON Schema (or,
for ``AskUserQuestion``, ask no question or repeat an option's label). Each
refusal raises :class:`~roomkit.ChannelRefusalError` with the text the model reads.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from roomkit.core.exceptions import ChannelRefusalError
from roomkit.tools import texts
from roomkit.tools.human_input.question_rules import question_problem
from roomkit.tools.validation import validate_tool_arguments

if TYPE_CHECKING:
    from roomkit.channels._calls.site import CallSite
    from roomkit.providers.ai.base import AITool, AIToolCall

__all__ = ["MAX_CALLS_AT_ONCE", "UNENCODABLE", "arguments_cut", "check", "crowded"]

UNENCODABLE = "unencodable_arguments"
"""The metadata entry of a screened call: what was wrong with its arguments."""

MAX_CALLS_AT_ONCE = 64
"""The most calls a realtime model has open at once in one session (a voice or conference
channel's: its calls come as it speaks, with no round that ends them).

Each call may put a question before a person or run a host tool; a model writing thousands
in one turn (a loop, an injected prompt) would ask thousands of questions. A call past the
bound is refused before anything runs, and the model reads why."""


def arguments_cut(call: AIToolCall) -> str | None:
    """The refusal the model reads for a call whose arguments were cut, or ``None``."""
    problem = call.metadata.get(UNENCODABLE)
    if isinstance(problem, str):
        return texts.unencodable_arguments(call.name, problem)
    if call.partial:
        return texts.arguments_cut(call.name)
    return None


def crowded(name: str, running: int) -> str | None:
    """The refusal the model reads for a call to ``name`` made while ``running`` calls of
    its session run already, or ``None`` while that is under the bound."""
    if running < MAX_CALLS_AT_ONCE:
        return None
    return texts.too_many_calls(name, MAX_CALLS_AT_ONCE)


def check(site: CallSite, name: str, arguments: object, *, refusal: str | None = None) -> AITool:
    """The tool ``name`` offered at ``site``, once the call passed every check.

    Args:
        refusal: the channel's refusal of the call, decided before it runs: its arguments
            were cut (:func:`arguments_cut`), or too many calls run (:func:`crowded`).

    Raises:
        ChannelRefusalError: ``refusal`` was given, the tool was not offered, or the
            arguments break its schema.
    """
    if refusal is not None:
        raise ChannelRefusalError(refusal)
    tool = site.tools.get(name)
    if tool is None:
        logging.getLogger(f"roomkit.channels.{site.channel_type}").warning(
            "Provider requested undeclared tool %s", name
        )
        raise ChannelRefusalError(texts.not_declared(name))
    problem = validate_tool_arguments(tool.parameters, arguments)
    if problem is None and isinstance(arguments, dict):
        problem = question_problem(name, tool.parameters, arguments)
    if problem is not None:
        raise ChannelRefusalError(texts.invalid_arguments(name, problem))
    return tool

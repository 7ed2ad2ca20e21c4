"""The pipeline: one tool call through check -> gate -> approve -> serve -> report.

Every channel and door runs a call through :func:`run_call`: the AI channel's turns, the voice
channel's function calls, spoken calls and reasoning calls, and the conference's function
calls. The checks refuse what the channel will not serve; the gate (BEFORE_TOOL_USE) may
refuse or rewrite; a policy and the approval rules decide whether a person is asked, and a
held tool waits for a person's decision; the call is served;
ON_TOOL_CALL hears how it ended, once. A call cut
while it runs (its turn or session ended, the channel closed, the model gave it up) is
reported cancelled, with the hint the door gives, and the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.approve import run_verdict
from roomkit.channels._calls.checks import check
from roomkit.channels._calls.gate import gate
from roomkit.channels._calls.outcome import CallOutcome, cut, refused
from roomkit.channels._calls.police import police
from roomkit.channels._calls.report import report
from roomkit.channels._calls.serve import ToolServer, serve
from roomkit.core.exceptions import ArgumentsTooLargeError, ChannelRefusalError
from roomkit.tools import texts

if TYPE_CHECKING:
    from roomkit.channels._calls.site import CallSite

__all__ = ["run_call"]


async def run_call(
    site: CallSite,
    server: ToolServer,
    name: str,
    arguments: Any,
    *,
    cut_hint: Callable[[], str],
    refusal: str | None = None,
) -> CallOutcome:
    """Run one call at ``site`` on ``server``; return the outcome the model reads.

    Args:
        cut_hint: why the call has no result, asked when it is cut.
        refusal: the channel's refusal of the call, decided before it runs (its arguments
            were cut, too many calls run), if any.
    """
    kit = site.kit
    try:
        # The requests the call creates go to the hooks of the kit whose channel serves it.
        with kit.announcing() if kit is not None else contextlib.nullcontext():
            outcome = await _decide(site, server, name, arguments, refusal)
    except asyncio.CancelledError:
        await report(site, name, cut(name, arguments, cut_hint()))
        raise
    return await report(site, name, outcome)


async def _decide(
    site: CallSite, server: ToolServer, name: str, arguments: Any, refusal: str | None
) -> CallOutcome:
    try:
        tool = check(site, name, arguments, refusal=refusal)
    except ChannelRefusalError as refusal:
        return refused(refusal.message, arguments if isinstance(arguments, dict) else {})
    decision = await gate(site, name, arguments, tool)
    if not decision.allowed:
        body = texts.error_body(decision.reason or "")
        return refused(body, arguments, detail=decision.detail)
    try:
        verdict = await police(site, server, name, decision.arguments, tool)
    except ArgumentsTooLargeError as error:
        # A held or policy-decided call is recorded as a request: arguments more than a
        # request keeps are the model's to write again, as a question's are.
        return refused(texts.invalid_arguments(name, str(error)), decision.arguments)
    if verdict is not None:
        return await run_verdict(site, server, name, verdict)
    return await serve(site, server, name, decision.arguments)

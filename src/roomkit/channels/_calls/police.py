"""Police: what a gated call comes to under its policy and its static rule, before it runs.

After the gate (BEFORE_TOOL_USE), on the final arguments: :func:`roomkit.policy.rule_call`
says whether a person is asked (under which rule), whether the call is refused, or whether it
runs unasked. Without a policy, a held tool is held as its ``Approval`` says and any other
runs unheld, as before. With one, each decision is recorded in the request's history:

- asked: the approval request's history holds ``policy_decided`` after ``created``;
- run or refused without anyone: an approval request nobody is told about records the call,
  settled by the policy as it is made (:mod:`roomkit.policy.unasked`), and the run goes
  through the same bound, spend-once path as an approved call (``executed``), so
  ``roomkit audit verify`` vouches for the chain of a call that ran without anyone.
"""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.approve import Verdict, create_held, held, verdict_on
from roomkit.channels._calls.outcome import refused
from roomkit.core.exceptions import HumanInputRejectedError
from roomkit.models.pending_input import arguments_digest
from roomkit.policy.decisions import PolicyCall
from roomkit.policy.ruling import Ruling, rule_call, ruling_policy
from roomkit.policy.unasked import POLICY, unasked

if TYPE_CHECKING:
    from roomkit.channels._calls.serve import ToolServer
    from roomkit.channels._calls.site import CallSite
    from roomkit.providers.ai.base import AITool
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["police"]


async def police(
    site: CallSite,
    server: ToolServer,
    name: str,
    arguments: dict[str, Any],
    tool: AITool | None,
) -> Verdict | None:
    """The verdict on the call; ``None`` when it runs unheld and no policy looked at it."""
    human = server.human_input_handler
    rule = held(server, name)
    policy = None
    if human is not None and name not in human.tool_names:
        policy = ruling_policy(rule, human.policy)
    if policy is None:
        if rule is None:
            return None
        return await verdict_on(site, server, name, arguments, rule, tool)
    assert human is not None
    call = PolicyCall(
        name,
        copy.deepcopy(arguments),
        arguments_digest(name, arguments),
        site.actor_id,
        site.room_id,
        site.channel_id,
    )
    ruling = await rule_call(policy, rule, call)
    if ruling.ask is not None:
        return await verdict_on(
            site, server, name, arguments, ruling.ask, tool, evidence=ruling.evidence
        )
    return await _unasked(site, human.handler, name, arguments, tool, ruling)


async def _unasked(
    site: CallSite,
    handler: HumanInputHandler,
    name: str,
    arguments: dict[str, Any],
    tool: AITool | None,
    ruling: Ruling,
) -> Verdict:
    """Record a call nobody is asked about, and the verdict: run it bound, or refuse it."""
    approvers = (ruling.by,) if ruling.by is not None else ()
    with unasked(ruling, ruling.refusal):
        request = await create_held(
            site, handler, name, arguments, tool, approvers=approvers, surface=POLICY
        )
    # The wait collects the settled request (the handler's cleanup of a request it made).
    with contextlib.suppress(HumanInputRejectedError):
        await handler.wait(request.pending_id, timeout=None)
    if ruling.refusal is not None:
        return Verdict(request, None, outcome=refused(ruling.refusal, arguments))
    return Verdict(request, request.arguments, request.arguments_digest)

"""Police: what a gated call comes to under its policy and its static rule, before it runs.

After the gate (BEFORE_TOOL_USE), on the final arguments: :func:`roomkit.policy.rule_call`
says whether a person is asked (under which rule), whether the call is refused, or whether it
runs unasked. Without a policy, a held tool is held as its ``Approval`` says and any other
runs unheld, as before. With one, each decision is recorded in the request's history:

- asked: the approval request's history holds ``policy_decided`` after ``created``;
- run or refused without anyone: an approval request nobody is told about records the call,
  settled by the policy as it is made (``create_decided``, in one go on the memory store;
  the arguments digested once, for the policy and the request), and the run goes
  through the same bound path as an approved call (digested again at dispatch,
  ``executed``), so ``roomkit audit verify`` vouches for the chain of a call that ran
  without anyone. On the memory store the history is kept as what its entries are made
  of (the policy's evidence, the call's input digested only then) and made when it is
  read; a durable store writes each entry, the record before the call runs. Its one run
  needs no spend unless its request has a key: no other run can reach a request made
  here under none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.approve import Verdict, held, site_options, verdict_on
from roomkit.channels._calls.outcome import refused
from roomkit.models.pending_input import arguments_digest
from roomkit.policy.decisions import PolicyCall
from roomkit.policy.ruling import Ruling, rule_call, ruling_policy
from roomkit.policy.unasked import POLICY, settling
from roomkit.stores import detached
from roomkit.tools.human_input import create_decided
from roomkit.tools.human_input.checks import check_arguments

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
    # Digested once: the policy reads it, and the request binds the arguments to it.
    try:
        digest = arguments_digest(name, arguments)
        copy = detached(arguments)
    except (ValueError, TypeError, RecursionError):
        # Arguments a hook or an external handler rewrote are unchecked (a lone surrogate,
        # a set, a dict inside itself, deeper than the stack): refused as a request would
        # refuse them, saying where. Only then: plain arguments are walked no more.
        check_arguments(arguments)
        raise
    call = PolicyCall(name, copy, digest, site.actor_id, site.room_id, site.channel_id)
    ruling = await rule_call(policy, rule, call, directory=human.handler.directory)
    if ruling.ask is not None:
        return await verdict_on(
            site, server, name, arguments, ruling.ask, tool, evidence=ruling.evidence
        )
    return await _unasked(site, human.handler, name, arguments, tool, ruling, digest)


async def _unasked(
    site: CallSite,
    handler: HumanInputHandler,
    name: str,
    arguments: dict[str, Any],
    tool: AITool | None,
    ruling: Ruling,
    digest: str,
) -> Verdict:
    """Record a call nobody is asked about, and the verdict: run it bound, or refuse it."""
    options = site_options(site, handler, tool)
    request = await create_decided(
        handler,
        name,
        detached(arguments),
        settling(ruling),
        by=ruling.by,
        surface=POLICY,
        digest=digest,
        # The evidence itself: on the memory store its entry is made when it is read.
        history=(ruling.record,) if ruling.record is not None else (),
        **options,
    )
    if ruling.refusal is not None:
        return Verdict(request, None, outcome=refused(ruling.refusal, arguments))
    # Without a key (the memory store's), a request made here is reached by no other run.
    return Verdict(
        request, request.arguments, request.arguments_digest, sole=options["key"] is None
    )
